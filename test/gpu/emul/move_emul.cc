// src/kernels/move.cu (broadcast, allgather, alltoall, barrier) compiled for the CPU over the
// headers of this folder, run by team_emul_test.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "move.cu"
#pragma GCC diagnostic pop

namespace cohort::kernels {
namespace {

const bool kernel_registered = [] {
  cohort_emul::register_kernel(detail::move_kernel());
  return true;
}();

}  // namespace
}  // namespace cohort::kernels
