// Allreduce's device code (allreduce.h launches it): one-shot, LL, two-shot and zero-copy (the
// last two serve reduce too), run by the reduction kernel of reduce_coll.cu.  Block b of every rank
// handles the same part of the message, so blocks trade only with their namesakes on the other
// ranks and never wait for another block of their own grid.
#pragma once

#include "coll_common.cuh"
#include "collectives.h"
#include "ll_access.cuh"

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

// `writer`'s LL slot in `owner`'s window for the parity of `sequence`.
__device__ inline LlLine *ll_slot(const DeviceTeam &t, int owner, int writer, uint64_t sequence) {
  const size_t parity = sequence & 1;
  return reinterpret_cast<LlLine *>(t.windows[owner] + t.layout.ll_offset +
                                    (parity * t.size + static_cast<size_t>(writer)) * kLlSlotBytes);
}

// The lines' flag of call `sequence`: never 0, the flag of a line nobody wrote (or that its
// reader took).
__device__ __forceinline__ uint32_t ll_flag_of(uint64_t sequence) {
  return static_cast<uint32_t>(sequence % 0xffffffffull) + 1;
}

// Polls `line`, this rank's line from `peer`, until it carries `flag`: true then, with it in
// *v; false when the team stopped or the peer took longer than the timeout (recorded as
// wait_peers does).
__device__ inline bool await_ll(const DeviceTeam &t, const LlLine *line, uint32_t flag, int peer,
                                uint64_t sequence, LlLine *v) {
  uint64_t start = 0;
  for (unsigned polls = 1;; ++polls) {
    *v = load_line(line);
    if (line_is(*v, flag)) return true;
#ifdef COHORT_KERNELS_EMULATION
    __nanosleep(0);  // the fibers of this block that write what the others wait for
#endif
    if (polls % 64 != 0) continue;
    const Stop stopped = stop_of(t);
    if (stopped.reason != kStopNone) {
      report_stop(t, stopped.reason, stopped.reason == kStopPeerTimeout ? stopped.peer : peer,
                  stopped.by, sequence);
      return false;
    }
    const uint64_t now = global_ns();
    if (start == 0) start = now;
    if (now - start > t.timeout_ns) {
      report_stop(t, kStopTimeout, peer, t.rank, sequence);
      return false;
    }
    __nanosleep(64);  // other ranks' blocks on this GPU get the issue slots
  }
}

// 8 bytes of a message as words and as elements of storage type S.
template <class S>
union LlPayload {
  uint32_t u32[2];
  S elem[kLlPayload / sizeof(S)];
};

// Up to kLlBytes per rank, as NCCL's LL protocol moves data: each thread owns lines of the
// message (8 bytes each), stores its input line into every peer's LL slot with the call's flag
// in it, then takes every peer's line of the same place from its own slots as it lands, zeroes
// it, and reduces in rank order in registers.  No fence, no flag of its own, no barrier: a
// line is its own signal, and a thread waits for nothing but its own lines.  The slots
// alternate parities as the one-shot area does, and every rank hears from every peer in each
// call, so a rank that starts call k + 2 finds the lines of call k taken.
template <DType D, RedOp Op>
__device__ void allreduce_ll(const CollArgs &a, uint64_t sequence) {
  using Fmt = detail::Format<D>;
  using Reduction = detail::Reduction<Fmt, typename detail::OpOf<Op>::type>;
  using S = typename Fmt::Storage;
  using C = typename Fmt::Compute;
  constexpr int kPer = kLlPayload / sizeof(S);
  const DeviceTeam &t = a.team;
  const size_t bytes = a.count * sizeof(S);
  const size_t lines = ll_lines(bytes);
  const uint32_t flag = ll_flag_of(sequence);
  const int divisor = Op == RedOp::kAvg ? t.size : 1;
  const auto *src = static_cast<const unsigned char *>(a.src);
  auto *dst = static_cast<unsigned char *>(a.dst);
  bool stop = false;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < lines && !stop;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    LlPayload<S> mine;
    line_payload(src, bytes, i, &mine.u32[0], &mine.u32[1]);
    for (int q = 0; q < t.size; ++q) {
      if (q != t.rank)
        store_line(ll_slot(t, q, t.rank, sequence) + i, mine.u32[0], mine.u32[1], flag);
    }
    // Rank q's line i: this rank's own, or q's as it lands (then zeroed: taken).
    auto input = [&](int q, LlPayload<S> *in) {
      *in = mine;
      if (q == t.rank) return true;
      LlLine *line = ll_slot(t, t.rank, q, sequence) + i;
      LlLine v;
      const bool came = await_ll(t, line, flag, q, sequence, &v);
      store_line(line, 0, 0, 0);  // the next call of this parity finds it empty
      in->u32[0] = ll_data(v.half[0]);
      in->u32[1] = ll_data(v.half[1]);
      return came;
    };
    LlPayload<S> in;
    stop = !input(0, &in);
    C acc[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = Fmt::widen(in.elem[e]);
    for (int q = 1; q < t.size && !stop; ++q) {
      stop = !input(q, &in);
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        acc[e] = detail::OpOf<Op>::type::apply(acc[e], Fmt::widen(in.elem[e]));
      }
    }
    if (stop) break;
    LlPayload<S> out;
#pragma unroll
    for (int e = 0; e < kPer; ++e) out.elem[e] = Reduction::finish(acc[e], divisor);
    put_payload(out.u32[0], out.u32[1], i, dst, bytes);
  }
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

// Registered buffers, any size, allreduce and reduce: rank r reduces slice r of the message
// from every rank's input into its own output (allreduce) or the root's (reduce), a step of
// kChunkBytes per block at a time; an allreduce then copies that step into every peer's output
// while it is still in L2: each input and output byte crosses memory once (the roofline's
// 2 x ranks x bytes).  Slice r of every buffer is touched by rank r alone, so in place is
// safe.  A reduce needs every input and the root's output registered, an allreduce every
// buffer; two-shot (for a reduce into the root's gather inbox) when some are not.
template <DType D, RedOp Op>
__device__ void zerocopy_reduction(const CollArgs &a, uint64_t sequence) {
  __shared__ ZeroCopyBuffers bufs;
  const bool everyone = a.kind == CollKind::kAllreduce;
  const ZeroCopyNeeds needs{true, true, -1, everyone ? -1 : a.root};
  const ZeroCopyStart start = zerocopy_start(a, sequence, needs, bufs);
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
    char *const out = bufs.dst[everyone ? t.rank : a.root] + offset;
    const void *const *srcs =
        gather_inputs(t, bufs.src[t.rank] + offset, [&](int q) { return bufs.src[q] + offset; });
    reduce_all<D, Op>(out, srcs, t.size, len, t.size);  // ends with __syncthreads
    for (int q = 0; q < t.size && everyone; ++q) {
      if (q != t.rank) copy(block_threads(), bufs.dst[q] + offset, out, len * elem);
    }
  }
  end_barrier(t, sequence);  // every peer wrote its slices here and read its inputs' here
}

}  // namespace cohort::kernels
