// What every collective kernel of src/kernels shares: the block size, how a message splits
// over blocks and slices, the window areas, and the chained reduction.  Device code only.
//
// Reuse of the windows between calls (every kernel keeps these two rules, so any sequence of
// collectives may run on one team):
// - The one-shot area has two parities: call k writes the parity k & 1 without waiting.  Each
//   call holds a handshake in which every rank hears from every peer, and a rank signals in
//   it only after its previous call ended; so when a rank starts call k + 2 every peer has
//   finished call k and its reads of that parity.
// - The chunk inboxes have no parity: a kernel that writes into a peer's inbox ends with
//   end_barrier() after its own last read of its inbox, so the next call writes at once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_team.h"
#include "handshake.cuh"
#include "primitives.cuh"

// reduce_all is kept out of line on the GPU (the CPU emulation of test/gpu leaves it to g++).
#if COHORT_KERNELS_EMULATION
#define COHORT_NOINLINE
#else
#define COHORT_NOINLINE __noinline__
#endif

namespace cohort::kernels {

constexpr int kCollThreads = 512;
constexpr size_t kAlignBytes = 16;  // parts start 16-byte aligned relative to the buffer

struct Part {
  size_t begin;  // element
  size_t count;
};

// Part `index` of `count` elements split over `parts`, in 16-byte units.
__host__ __device__ inline Part split(size_t count, size_t elem, unsigned index, unsigned parts) {
  const size_t unit = kAlignBytes / elem;  // elements per unit (elem <= 16)
  const size_t units = (count + unit - 1) / unit;
  const size_t per = (units + parts - 1) / parts;
  const size_t begin = per * unit * index < count ? per * unit * index : count;
  const size_t end = per * unit * (index + 1) < count ? per * unit * (index + 1) : count;
  return {begin, end - begin};
}

__device__ inline char *at(const void *base, size_t elements, size_t elem) {
  return static_cast<char *>(const_cast<void *>(base)) + elements * elem;
}

// `writer`'s one-shot slot in `owner`'s window for the parity of `sequence`.
__device__ inline char *oneshot_slot(const DeviceTeam &t, int owner, int writer,
                                     uint64_t sequence) {
  const size_t parity = sequence & 1;
  return t.windows[owner] + t.layout.oneshot_offset +
         (parity * t.size + static_cast<size_t>(writer)) * kOneShotBytes;
}

// This block's chunk inbox `half` (0 or 1) in `owner`'s window.
__device__ inline char *chunk_inbox(const DeviceTeam &t, int owner, int half) {
  return t.windows[owner] + t.layout.chunks_offset + (blockIdx.x * 2 + half) * kChunkBytes;
}

// A chunk inbox split into one slice per writer: the bytes of each, 16-byte aligned.
__host__ __device__ inline size_t slice_bytes(int ranks) {
  return kChunkBytes / ranks / kAlignBytes * kAlignBytes;
}

// dst = srcs[0] OP ... OP srcs[n-1] over `count` elements, in rank order, in one pass (every
// input accumulated in the compute type, fp32 for fp16/bf16, rounded once); dst may be any
// one of the inputs.  Not inlined: one copy of the reduction per dtype x op serves every call
// site of a kernel file.
template <DType D, RedOp Op>
__device__ COHORT_NOINLINE void reduce_all(void *dst, const void *const *srcs, int n, size_t count,
                                           int divisor) {
  if (n == 1) {  // a team of one: the data as it is (an average over one rank is the value)
    if (dst != srcs[0]) copy(block_threads(), dst, srcs[0], count * dtype_size(D));
  } else {
    reduce_compact<D, Op>(block_threads(), ReduceOperands{dst, srcs, n, count, divisor});
  }
  __syncthreads();
}

// The inputs of one reduction, in rank order: this rank's own data from `own`, the peers'
// from `slot_of(q)`.  Every thread of the block calls it; the array is ready on return.
template <class SlotOf>
__device__ const void *const *gather_inputs(const DeviceTeam &t, const void *own, SlotOf slot_of) {
  __shared__ const void *srcs[kMaxLocalRanks];
  __syncthreads();  // the previous reduction read the array
  if (threadIdx.x < t.size) {
    const int q = threadIdx.x;
    srcs[q] = q == t.rank ? own : slot_of(q);
  }
  __syncthreads();
  return srcs;
}

}  // namespace cohort::kernels
