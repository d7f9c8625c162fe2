// Allreduce's device code (allreduce.h launches it): one-shot and two-shot (which serves
// reduce too), run by the reduction kernel of reduce_coll.cu.  Block b of every rank handles the
// same part of the message, so blocks trade only with their namesakes on the other ranks and never
// wait for another block of their own grid.
#pragma once

#include "coll_common.cuh"
#include "collectives.h"

namespace cohort::kernels {

// Up to kOneShotBytes: each rank pushes its part into every peer's one-shot slot, then
// reduces all of them; one handshake.
template <DType D, RedOp Op>
__device__ void allreduce_oneshot(const CollArgs &a, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  auto slot = [&](int owner, int writer) {
    return oneshot_slot(t, owner, writer, sequence) + part.begin * elem;
  };
  for (int q = 0; q < t.size; ++q) {
    if (q != t.rank) {
      copy(block_threads(), slot(q, t.rank), at(a.src, part.begin, elem), part.count * elem);
    }
  }
  const uint64_t value = flag_value(sequence, 0);
  signal_peers(t, kFlagArrive, value);
  if (!wait_peers(t, kFlagArrive, value, sequence)) return;
  const void *const *srcs =
      gather_inputs(t, at(a.src, part.begin, elem), [&](int q) { return slot(t.rank, q); });
  reduce_all<D, Op>(at(a.dst, part.begin, elem), srcs, t.size, part.count, t.size);
}

// Any size, allreduce and reduce: per pipeline step of a block, slice q of every rank's data
// goes to rank q's inbox (half 0); q reduces it in rank order and hands the result on through
// the gather inboxes (half 1): to every peer (allreduce: q writes its output, then pushes
// it), or to the root alone (reduce: q reduces straight into the root's gather inbox).
template <DType D, RedOp Op>
__device__ void twoshot(const CollArgs &a, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  const bool everyone = a.kind == CollKind::kAllreduce;
  const bool gets_result = everyone || t.rank == a.root;
  // A step covers size slices of slice_size bytes, one per rank.
  const size_t slice_size = slice_bytes(t.size);
  const size_t step_elems = slice_size / elem * t.size;
  char *const inbox = chunk_inbox(t, t.rank, 0);
  auto inbox_of = [&](int owner, int gather) {
    return chunk_inbox(t, owner, gather) + static_cast<size_t>(t.rank) * slice_size;
  };
  uint32_t step = 0;
  for (size_t done = 0; done < part.count; done += step_elems, ++step) {
    const size_t base = part.begin + done;
    const size_t len = min(step_elems, part.count - done);
    auto slice = [&](int q) { return split(len, elem, q, t.size); };
    const uint64_t value = flag_value(sequence, step);
    // Reduce-scatter: slice q of this step goes to rank q's inbox.
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank) continue;
      copy(block_threads(), inbox_of(q, 0), at(a.src, base + slice(q).begin, elem),
           slice(q).count * elem);
    }
    signal_peers(t, kFlagArrive, value);
    if (!wait_peers(t, kFlagArrive, value, sequence)) return;
    const Part mine = slice(t.rank);
    const void *const *srcs = gather_inputs(t, at(a.src, base + mine.begin, elem), [&](int q) {
      return inbox + static_cast<size_t>(q) * slice_size;
    });
    char *result = gets_result ? at(a.dst, base + mine.begin, elem) : inbox_of(a.root, 1);
    reduce_all<D, Op>(result, srcs, t.size, mine.count, t.size);
    if (everyone) {  // this rank's reduced slice to every peer's gather inbox
      for (int q = 0; q < t.size; ++q) {
        if (q != t.rank) copy(block_threads(), inbox_of(q, 1), result, mine.count * elem);
      }
    }
    signal_peers(t, kFlagResult, value);
    if (!wait_peers(t, kFlagResult, value, sequence)) return;
    if (gets_result) {
      for (int q = 0; q < t.size; ++q) {
        if (q == t.rank) continue;
        copy(block_threads(), at(a.dst, base + slice(q).begin, elem),
             inbox + kChunkBytes + static_cast<size_t>(q) * slice_size, slice(q).count * elem);
      }
    }
    __syncthreads();  // the gather inbox is free again before this block signals the next step
  }
  end_barrier(t, sequence);  // the gather inboxes are read: the next call may write
}

// Registered buffers, any size: rank r reduces slice r of the message from every rank's input
// into its own output, a step of kChunkBytes per block at a time, then copies that step into
// every peer's output while it is still in L2: each input and output byte crosses memory
// once (the roofline's 2 x ranks x bytes).  Slice r of every buffer is touched by rank r
// alone, so in place is safe.  Two-shot when some rank's buffers are not registered.
template <DType D, RedOp Op>
__device__ void allreduce_zerocopy(const CollArgs &a, uint64_t sequence) {
  __shared__ ZeroCopyBuffers bufs;
  const ZeroCopyStart start = zerocopy_start(a, sequence, ZeroCopyNeeds{true, true}, bufs);
  if (start == ZeroCopyStart::kStopped) return;
  if (start == ZeroCopyStart::kUnregistered) {
    twoshot<D, Op>(a, sequence);
    return;
  }
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const Part mine = split(a.count, elem, t.rank, t.size);
  const Part part = split(mine.count, elem, blockIdx.x, gridDim.x);
  const size_t step_elems = kChunkBytes / elem;
  for (size_t done = 0; done < part.count; done += step_elems) {
    const size_t offset = (mine.begin + part.begin + done) * elem;
    const size_t len = min(step_elems, part.count - done);
    char *const out = bufs.dst[t.rank] + offset;
    const void *const *srcs =
        gather_inputs(t, bufs.src[t.rank] + offset, [&](int q) { return bufs.src[q] + offset; });
    reduce_all<D, Op>(out, srcs, t.size, len, t.size);  // ends with __syncthreads
    for (int q = 0; q < t.size; ++q) {
      if (q != t.rank) copy(block_threads(), bufs.dst[q] + offset, out, len * elem);
    }
  }
  end_barrier(t, sequence);  // every peer wrote its slices here and read its inputs' here
}

}  // namespace cohort::kernels
