// src/kernels/reduce_coll.cu (the kernels of allreduce, reduce and reduce-scatter) compiled
// for the CPU over the headers of this folder, run by team_emul_test.
// threadIdx.x (unsigned) < team.size (int): harmless for a team's sizes, and nvcc's device
// pass does not warn about it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "reduce_coll.cu"
#pragma GCC diagnostic pop

namespace cohort::kernels {
namespace {

// The launcher passes its kernel by address: the shim learns each kernel's parameters here,
// through the launcher's own table (every dtype x op).
const bool kernels_registered = [] {
  for (int d = 0; d < kNumDTypes; ++d) {
    for (int o = 0; o < kNumRedOps; ++o) {
      cohort_emul::register_kernel(
          detail::reduce_kernel_of(static_cast<DType>(d), static_cast<RedOp>(o)));
    }
  }
  return true;
}();

}  // namespace
}  // namespace cohort::kernels
