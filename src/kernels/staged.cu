// The staged piece kernel (staged.h): one block copies the input into the slot, announces it,
// waits for the host's collective and copies the output back.
#include "staged.h"

#include "global_ns.cuh"

namespace cohort::kernels {
namespace {

constexpr int kThreads = 512;
// Loads in flight per thread before its stores: reads of host memory are round trips.
constexpr int kBatch = 4;

// Every thread of the block copies words i, i + blockDim.x, ...: a batch of loads, then their
// stores.  Loads bypass L1 (__ldcv): the slot is written by the host between the two copies.
template <typename T>
__device__ void copy_words(const T *src, T *dst, size_t n) {
  const size_t stride = blockDim.x;
  for (size_t base = threadIdx.x; base < n; base += stride * kBatch) {
    T v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (base + j * stride < n) v[j] = __ldcv(src + base + j * stride);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (base + j * stride < n) dst[base + j * stride] = v[j];
    }
  }
}

__device__ void copy_bytes(const void *src, void *dst, size_t bytes) {
  const uintptr_t align =
      reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | bytes;
  if (align % 16 == 0) {
    copy_words(static_cast<const uint4 *>(src), static_cast<uint4 *>(dst), bytes / 16);
  } else if (align % 8 == 0) {
    copy_words(static_cast<const uint2 *>(src), static_cast<uint2 *>(dst), bytes / 8);
  } else if (align % 4 == 0) {
    copy_words(static_cast<const unsigned *>(src), static_cast<unsigned *>(dst), bytes / 4);
  } else {
    copy_words(static_cast<const unsigned char *>(src), static_cast<unsigned char *>(dst), bytes);
  }
}

// Thread 0 waits for done to reach the piece; false once give_up_ns passed.
__device__ bool wait_done(const StagedPieceArgs &a) {
  const uint64_t start = global_ns();
  const volatile uint32_t *done = a.done;
  while (static_cast<int32_t>(*done - a.piece) < 0) {
    if (global_ns() - start > a.give_up_ns) return false;
#if __CUDA_ARCH__ >= 700
    __nanosleep(64);
#endif
  }
  return true;
}

__global__ void __launch_bounds__(kThreads) staged_piece_kernel(const StagedPieceArgs a) {
  __shared__ bool go;
  copy_bytes(a.in_src, a.in_dst, a.in_bytes);
  __threadfence_system();  // this thread's stores to the slot, before ready
  __syncthreads();
  if (threadIdx.x == 0) {
    *static_cast<volatile uint32_t *>(a.ready) = a.piece;
    go = wait_done(a);
    __threadfence_system();  // the host's stores to the slot, before the reads below
  }
  __syncthreads();
  if (!go) return;
  copy_bytes(a.out_src, a.out_dst, a.out_bytes);
  if (a.finished == nullptr) return;
  __threadfence_system();  // this thread's stores of the output, before finished
  __syncthreads();
  if (threadIdx.x == 0) *static_cast<volatile uint32_t *>(a.finished) = a.piece;
}

}  // namespace

cudaError_t launch_staged_piece(const StagedPieceArgs &args, cudaStream_t stream) {
  if (args.ready == nullptr || args.done == nullptr ||
      (args.in_bytes > 0 && (args.in_src == nullptr || args.in_dst == nullptr)) ||
      (args.out_bytes > 0 && (args.out_src == nullptr || args.out_dst == nullptr))) {
    return cudaErrorInvalidValue;
  }
  // cudaLaunchKernel answers for this launch alone (see allreduce.cu).
  void *params[] = {const_cast<StagedPieceArgs *>(&args)};
  return cudaLaunchKernel(staged_piece_kernel, dim3(1), dim3(kThreads), params, 0, stream);
}

cudaError_t staged_piece_available() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, staged_piece_kernel);
}

}  // namespace cohort::kernels
