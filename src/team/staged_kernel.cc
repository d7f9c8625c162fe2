#include "team/staged_kernel.h"

#include "core/build_info.h"
#include "core/log.h"
#if COHORT_HAVE_CUDA
#include "kernels/staged.h"
#include "tl_gpu/cuda_call.h"
#endif

namespace cohort {

#if COHORT_HAVE_CUDA

bool staged_kernel_usable() {
  static const bool usable = [] {
    const cudaError_t err = kernels::staged_piece_available();
    if (err != cudaSuccess) {
      cudaGetLastError();  // not this thread's error to report later
      COHORT_LOG_INFO(COLL,
                      "small pieces through host memory use the stream's copies: the CUDA "
                      "runtime cannot launch their kernel here (%s)",
                      cudaGetErrorName(err));
    }
    return err == cudaSuccess;
  }();
  return usable;
}

Status launch_staged_kernel(const StagedKernelPiece &p, void *stream) {
  kernels::StagedPieceArgs a;
  a.in_src = p.in_src;
  a.in_dst = p.in_dst;
  a.in_bytes = p.in_bytes;
  a.out_src = p.out_src;
  a.out_dst = p.out_dst;
  a.out_bytes = p.out_bytes;
  a.ready = p.ready;
  a.done = p.done;
  a.piece = p.piece;
  a.finished = p.finished;
  a.ll_in = p.lines_in;
  a.ll_out = p.lines_out;
  a.give_up_ns = static_cast<uint64_t>((2 * p.timeout_s + 60) * 1e9);
  return tl_gpu::cuda_status(kernels::launch_staged_piece(a, static_cast<cudaStream_t>(stream)),
                             "launching a piece's kernel through host memory");
}

#else  // !COHORT_HAVE_CUDA

bool staged_kernel_usable() { return false; }

Status launch_staged_kernel(const StagedKernelPiece &, void *) {
  return fail(COHORT_ERR_NOT_SUPPORTED, "Cohort was built without the CUDA toolkit");
}

#endif

}  // namespace cohort
