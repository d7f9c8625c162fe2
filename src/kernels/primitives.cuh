// Data-movement primitives every collective kernel is built from: copy and elementwise
// reduction of device buffers, 16 bytes per access wherever the pointers allow.  Device code
// only, header-only.
//
// Contract of every primitive here:
// - Called by every thread of a ThreadGroup with the same arguments (the whole grid, a block,
//   or a slice of warps a collective gives one channel).  The group splits the work; each
//   byte is read and written by exactly one thread.  Any size >= 1 is correct; whole warps
//   numbered in order (index % 32 == lane) make every access coalesced.
// - No synchronisation inside: a caller that reads the output with other threads
//   synchronises (__syncthreads, a flag, the end of the kernel) itself.
// - Any alignment and any count.  When every pointer has the same misalignment modulo 16, the
//   elements up to the output's next 512-byte boundary are done one at a time and the rest
//   moves in 16-byte accesses; when they differ, the body uses the widest access all of them
//   allow (8, 4, 2 or 1 bytes, an element assembled from narrower accesses when it is
//   misaligned to its own size); the last < 512 bytes are done one element at a time.  The
//   main loop keeps 8 16-byte accesses of each input in flight per thread (4 for fp16/bf16
//   with 3 inputs or more), a warp's covering 4 KiB in a row of each buffer.
// - The output may be exactly one of the inputs (in place), never a partial overlap.
// - Plain global loads and stores (not the read-only cache): inputs may be a peer's buffer
//   mapped through CUDA IPC, written before the caller's flag said it was ready.
//
// Reductions (reduce<D, Op>) follow the host path (src/coll/host_reduce.h) bit for bit:
// integers wrap, fp16/bf16 are computed in fp32 and round once when stored (all nsrcs inputs
// accumulate in fp32), inputs combine in order srcs[0], srcs[1], ..., min/max propagate NaN,
// and kAvg divides the stored sum once by `divisor` (integers truncating toward zero;
// fp16/bf16 round twice, as finalize_avg).  A NaN's payload is unspecified.
#pragma once

#include <cstddef>

#include "impl/primitives__types.cuh"
#include "types.h"

namespace cohort::kernels {

// The threads that share one primitive call: this thread's index and their number.
struct ThreadGroup {
  unsigned index;
  unsigned size;
};

// Every thread of the grid (blockDim.x a multiple of 32 keeps warps whole).
__device__ __forceinline__ ThreadGroup grid_threads() {
  return {blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x};
}
// The threads of this block.
__device__ __forceinline__ ThreadGroup block_threads() { return {threadIdx.x, blockDim.x}; }

// What one reduction reads and writes.
struct ReduceOperands {
  void *dst;
  // nsrcs pointers, nsrcs >= 1 (reduce.h's launchers take up to kMaxReduceInputs, the
  // collectives one per local rank); the array itself must be readable by every
  // thread (a __grid_constant__ kernel parameter, shared or global memory).
  const void *const *srcs;
  int nsrcs;
  size_t count;     // elements
  int divisor = 1;  // kAvg only: the stored sum is divided by it (>= 1); ignored otherwise
};

// dst[0, bytes) = src[0, bytes).
__device__ inline void copy(ThreadGroup group, void *dst, const void *src, size_t bytes);

// dst[i] = srcs[0][i] OP srcs[1][i] OP ... for i < count, then / divisor for kAvg.  With
// nsrcs == 1 the element goes through the format's compute type (fp16/bf16 via fp32, so a
// NaN's payload may change): use copy() to move data, reduce<D, kAvg> with one input for
// the final division alone.
template <DType D, RedOp Op>
__device__ inline void reduce(ThreadGroup group, const ReduceOperands &operands);

// reduce() with the same results and fewer code paths, for kernels that instantiate it for
// every dtype x op beside other work (the collectives): 16-byte packs when every pointer
// agrees modulo 16, else packs of whole elements, else one element at a time; a third of the
// code to compile.  fp16/bf16 keep half the packs in flight whatever the input count (reduce()
// keeps all of them for two inputs).
template <DType D, RedOp Op>
__device__ inline void reduce_compact(ThreadGroup group, const ReduceOperands &operands);

}  // namespace cohort::kernels

#include "impl/primitives__funcs.cuh"
