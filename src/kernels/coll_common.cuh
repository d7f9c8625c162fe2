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
// - The zero-copy descriptors have two parities, as the one-shot area; a zero-copy call
//   writes into its peers' buffers and reads theirs, so it ends with end_barrier() too (the
//   caller may reuse its buffers once the kernel ended).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives.h"
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

// Every rank's buffers of a zero-copy call, as mapped on this rank (own ones included).
struct ZeroCopyBuffers {
  const char *src[kMaxLocalRanks];
  char *dst[kMaxLocalRanks];
};

enum class ZeroCopyStart : int { kGo, kUnregistered, kStopped };

// This rank's descriptor of call `sequence` in `owner`'s window.
__device__ inline ZeroCopyDesc *zerocopy_desc(const DeviceTeam &t, int owner, uint64_t sequence) {
  return reinterpret_cast<ZeroCopyDesc *>(t.windows[owner] + t.layout.zerocopy_offset) +
         (sequence & 1);
}

__device__ inline const char *registered_at(const DeviceTeam &t, BufferRef ref, int q) {
  return t.registered[static_cast<size_t>(ref.slot) * kMaxLocalRanks + q] + ref.offset;
}

// Which of every rank's buffers a zero-copy kernel reaches on the peers (and so needs
// registered): allreduce both, allgather and alltoall the outputs, reduce-scatter the inputs,
// broadcast the root's input and every output, reduce every input and the root's output.
struct ZeroCopyNeeds {
  bool src;
  bool dst;
  int src_of = -1;  // >= 0: only this rank's input (a broadcast's root)
  int dst_of = -1;  // >= 0: only this rank's output (a reduce's root)
};

// The start of a zero-copy call, every thread of a block: publishes where this rank's buffers
// lie (its descriptor, in its own window), waits for every peer's, and fills `out` (shared
// memory) with every rank's buffers it `needs` (its own are always there).  kUnregistered on
// every rank alike when some rank's needed buffer is not registered (every rank reads the same
// descriptors); kStopped when the team stopped.  Uses the kFlagZeroCopy flags only, so a call
// may go on with another algorithm.  A rank that `declines` publishes its buffers as not
// registered, so that every rank goes on without zero-copy.
__device__ inline ZeroCopyStart zerocopy_start(const CollArgs &a, uint64_t sequence,
                                               ZeroCopyNeeds needs, ZeroCopyBuffers &out,
                                               bool declines = false) {
  const DeviceTeam &t = a.team;
  if (threadIdx.x == 0) {
    *zerocopy_desc(t, t.rank, sequence) =
        declines ? ZeroCopyDesc{} : ZeroCopyDesc{a.src_ref, a.dst_ref};
  }
  const uint64_t value = flag_value(sequence, 0);
  signal_peers(t, kFlagZeroCopy, value);  // its fence publishes the descriptor too
  if (!wait_peers(t, kFlagZeroCopy, value, sequence)) return ZeroCopyStart::kStopped;
  bool missing = false;
  const int q = static_cast<int>(threadIdx.x);
  if (q < t.size) {  // thread q read q's flag (acquire): q's descriptor is visible
    const volatile ZeroCopyDesc *d = zerocopy_desc(t, q, sequence);
    const BufferRef src{d->src.slot, 0, d->src.offset};
    const BufferRef dst{d->dst.slot, 0, d->dst.offset};
    const bool src_needed = needs.src && (needs.src_of < 0 || needs.src_of == q);
    const bool dst_needed = needs.dst && (needs.dst_of < 0 || needs.dst_of == q);
    missing = (src_needed && src.slot < 0) || (dst_needed && dst.slot < 0);
    const bool own = q == t.rank;
    out.src[q] = own                      ? static_cast<const char *>(a.src)
                 : src_needed && !missing ? registered_at(t, src, q)
                                          : nullptr;
    out.dst[q] = own                      ? static_cast<char *>(a.dst)
                 : dst_needed && !missing ? const_cast<char *>(registered_at(t, dst, q))
                                          : nullptr;
  }
  return __syncthreads_or(missing) ? ZeroCopyStart::kUnregistered : ZeroCopyStart::kGo;
}

}  // namespace cohort::kernels
