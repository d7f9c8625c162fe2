// src/kernels/allreduce.cu compiled for the CPU over the headers of this folder (see
// cuda_emul_prelude.h): the real launcher and kernels, run by team_emul_test.
// threadIdx.x (unsigned) < team.size (int): harmless for a team's sizes, and nvcc's device
// pass does not warn about it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "allreduce.cu"
#pragma GCC diagnostic pop

namespace cohort::kernels {
namespace {

// launch_allreduce passes its kernel by address: the shim learns each kernel's parameters
// here, through the launcher's own dispatch (every dtype x op x algorithm).
const bool kernels_registered = [] {
  for (int d = 0; d < kNumDTypes; ++d) {
    for (int o = 0; o < kNumRedOps; ++o) {
      for (AllreduceAlgo algo : {AllreduceAlgo::kOneShot, AllreduceAlgo::kTwoShot}) {
        cohort_emul::register_kernel(pick(static_cast<DType>(d), static_cast<RedOp>(o), algo));
      }
    }
  }
  return true;
}();

}  // namespace
}  // namespace cohort::kernels
