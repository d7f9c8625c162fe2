// The staged piece kernel (staged.h): one block copies the input into the slot, announces it,
// waits for the host's collective and copies the output back; or moves both as lines
// (ll_line.h), the flags in the data.
#include "staged.h"

#include "global_ns.cuh"
#include "ll_access.cuh"

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

// ------------------------------------------------------------------ a piece as lines

static_assert(static_cast<size_t>(kThreads) >= kLlMaxLines, "a line per thread");

// Polls `line` until both its flags are the piece's: true then, with the line in *v.  False
// once give_up_ns passed since `start`, or when the done word reached the piece and the line
// still is not the piece's: the host ended the piece, and a later piece's end overwrote the
// line (pieces ended unrun once the team stopped: the output is no result then anyway).  The
// host writes the lines before done, so a line read after done reached the piece is final.
// Each poll is a round trip to host memory (the line and done read side by side): the first
// ones follow each other at once.
__device__ bool await_line(const StagedPieceArgs &a, const LlLine *line, uint64_t start,
                           LlLine *v) {
  const volatile uint32_t *done = a.done;
  auto mine = [&] { return line_is(*v, a.piece); };
  for (unsigned polls = 0;; ++polls) {
    *v = load_line(line);
    const bool ended = static_cast<int32_t>(*done - a.piece) >= 0;
    if (mine()) return true;
    if (ended) {
      *v = load_line(line);
      return mine();
    }
    if (global_ns() - start > a.give_up_ns) return false;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
    if (polls >= 64) __nanosleep(100);
#endif
  }
}

// The piece as lines: each thread writes one input line; the thread of the last output line
// waits for it (the host writes them in order), then each thread takes its own, and the output
// is written only once every line came (else nothing, as the words' form).
__device__ void lines_piece(const StagedPieceArgs &a) {
  __shared__ bool go;
  const size_t t = threadIdx.x;
  const size_t in_lines = ll_lines(a.in_bytes);
  const size_t out_lines = ll_lines(a.out_bytes);
  const uint64_t start = global_ns();
  if (t < in_lines) {
    uint32_t d0, d1;
    line_payload(static_cast<const unsigned char *>(a.in_src), a.in_bytes, t, &d0, &d1);
    store_line(a.ll_in + t, d0, d1, a.piece);
  }
  LlLine v;
  if (t == out_lines - 1) go = await_line(a, a.ll_out + t, start, &v);
  __syncthreads();
  if (!go) return;
  const bool lost = t < out_lines - 1 && !await_line(a, a.ll_out + t, start, &v);
  if (__syncthreads_or(lost)) return;
  if (t < out_lines) {
    put_payload(ll_data(v.half[0]), ll_data(v.half[1]), t, static_cast<unsigned char *>(a.out_dst),
                a.out_bytes);
    store_line(a.ll_out + t, 0, 0, 0);  // taken: no later piece mistakes it for its own
  }
  if (a.finished == nullptr) return;
  __threadfence_system();  // this thread's stores of the output, before finished
  __syncthreads();
  if (t == 0) *static_cast<volatile uint32_t *>(a.finished) = a.piece;
}

// ------------------------------------------------------------------ the kernel

__global__ void __launch_bounds__(kThreads) staged_piece_kernel(const StagedPieceArgs a) {
  if (a.ll_in != nullptr) {
    lines_piece(a);
    return;
  }
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

namespace {

bool valid(const StagedPieceArgs &a) {
  if ((a.in_bytes > 0 && a.in_src == nullptr) || (a.out_bytes > 0 && a.out_dst == nullptr)) {
    return false;
  }
  if (a.ll_in != nullptr || a.ll_out != nullptr) {
    return a.ll_in != nullptr && a.ll_out != nullptr && a.done != nullptr &&
           a.in_bytes <= kLlMaxBytes && a.out_bytes <= kLlMaxBytes;
  }
  return a.ready != nullptr && a.done != nullptr && (a.in_bytes == 0 || a.in_dst != nullptr) &&
         (a.out_bytes == 0 || a.out_src != nullptr);
}

}  // namespace

cudaError_t launch_staged_piece(const StagedPieceArgs &args, cudaStream_t stream) {
  if (!valid(args)) return cudaErrorInvalidValue;
  // cudaLaunchKernel answers for this launch alone (see allreduce.cu).
  void *params[] = {const_cast<StagedPieceArgs *>(&args)};
  return cudaLaunchKernel(staged_piece_kernel, dim3(1), dim3(kThreads), params, 0, stream);
}

cudaError_t staged_piece_available() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, staged_piece_kernel);
}

}  // namespace cohort::kernels
