// The collectives that move data without reducing it (collectives.h): broadcast, allgather,
// alltoall, barrier.  One kernel for all of them: they copy bytes, whatever the dtype, so
// every message is split in 16-byte units of bytes.
#include "coll_common.cuh"
#include "collectives.h"

namespace cohort::kernels {
namespace {

__device__ inline char *byte_at(const void *base, size_t offset) { return at(base, offset, 1); }

// This block's bytes of a message of `bytes`.
__device__ inline Part block_part(size_t bytes) { return split(bytes, 1, blockIdx.x, gridDim.x); }

// The one handshake of a one-shot call: every rank hears from every peer.
__device__ inline bool arrive_all(const DeviceTeam &t, uint64_t sequence) {
  const uint64_t value = flag_value(sequence, 0);
  signal_peers(t, kFlagArrive, value);
  return wait_peers(t, kFlagArrive, value, sequence);
}

// Small broadcast: the root pushes its message into every peer's one-shot slot.
__device__ void broadcast_oneshot(const CollArgs &a, uint64_t sequence, size_t bytes) {
  const DeviceTeam &t = a.team;
  const Part part = block_part(bytes);
  if (t.rank == a.root) {
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank) continue;
      copy(block_threads(), oneshot_slot(t, q, a.root, sequence) + part.begin,
           byte_at(a.src, part.begin), part.count);
    }
    if (a.src != a.dst) {
      copy(block_threads(), byte_at(a.dst, part.begin), byte_at(a.src, part.begin), part.count);
    }
  }
  if (!arrive_all(t, sequence) || t.rank == a.root) return;
  copy(block_threads(), byte_at(a.dst, part.begin),
       oneshot_slot(t, t.rank, a.root, sequence) + part.begin, part.count);
}

// Large broadcast: per step the root stages a chunk in its own inbox and the peers pull it;
// the root refills a half once every peer said it read that half's previous chunk.
__device__ void broadcast_pipelined(const CollArgs &a, uint64_t sequence, size_t bytes) {
  const DeviceTeam &t = a.team;
  const Part part = block_part(bytes);
  const bool root = t.rank == a.root;
  uint32_t step = 0;
  for (size_t done = 0; done < part.count; done += kChunkBytes, ++step) {
    const size_t base = part.begin + done;
    const size_t len = min(kChunkBytes, part.count - done);
    const int half = static_cast<int>(step & 1);
    const uint64_t value = flag_value(sequence, step);
    if (root) {
      if (step >= 2 && !wait_peers(t, kFlagResult, flag_value(sequence, step - 2), sequence)) {
        return;
      }
      copy(block_threads(), chunk_inbox(t, t.rank, half), byte_at(a.src, base), len);
      if (a.src != a.dst) copy(block_threads(), byte_at(a.dst, base), byte_at(a.src, base), len);
      signal_peers(t, kFlagArrive, value);
    } else {
      if (!wait_peers(t, kFlagArrive, value, sequence, a.root)) return;
      copy(block_threads(), byte_at(a.dst, base), chunk_inbox(t, a.root, half), len);
      signal_peers(t, kFlagResult, value, a.root);
    }
  }
  end_barrier(t, sequence);
}

// Registered buffers, any size: rank r copies slice r of the root's input straight into every
// rank's output, a step of kChunkBytes per block at a time (read once from the root, then from
// L2): the root's input and every output need registering.  Pipelined when some are not.
__device__ void broadcast_zerocopy(const CollArgs &a, uint64_t sequence, size_t bytes) {
  __shared__ ZeroCopyBuffers bufs;
  const ZeroCopyStart start =
      zerocopy_start(a, sequence, ZeroCopyNeeds{true, true, a.root, -1}, bufs);
  if (start == ZeroCopyStart::kStopped) return;
  if (start == ZeroCopyStart::kUnregistered) return broadcast_pipelined(a, sequence, bytes);
  const DeviceTeam &t = a.team;
  const Part mine = split(bytes, 1, t.rank, t.size);
  const Part part = split(mine.count, 1, blockIdx.x, gridDim.x);
  for (size_t done = 0; done < part.count; done += kChunkBytes) {
    const size_t offset = mine.begin + part.begin + done;
    const size_t len = min(kChunkBytes, part.count - done);
    const char *from = bufs.src[a.root] + offset;
    for (int q = 0; q < t.size; ++q) {
      char *to = bufs.dst[q] + offset;
      if (to != from) copy(block_threads(), to, from, len);
    }
  }
  end_barrier(t, sequence);  // every peer wrote its slice here and read the root's
}

// Where rank `q`'s block of an allgather or alltoall lies in this rank's output, and where
// the block for rank `q` lies in its input.
struct Blocks {
  bool per_peer_input;  // alltoall: the input holds a block per peer; allgather: one block
  size_t bytes;         // of one block
  __device__ const char *input(const void *src, int q, size_t offset) const {
    return byte_at(src, (per_peer_input ? q * bytes : 0) + offset);
  }
  __device__ char *output(void *dst, int q, size_t offset) const {
    return byte_at(dst, q * bytes + offset);
  }
};

// This rank's own block: from its input to its output, unless in place.
__device__ inline void copy_own(const CollArgs &a, const Blocks &b, size_t offset, size_t len) {
  const int me = a.team.rank;
  const char *from = b.input(a.src, me, offset);
  char *to = b.output(a.dst, me, offset);
  if (from != to) copy(block_threads(), to, from, len);
}

// Small allgather / alltoall: each rank's block for q lands in q's one-shot slot.
__device__ void exchange_oneshot(const CollArgs &a, const Blocks &b, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  const Part part = block_part(b.bytes);
  for (int q = 0; q < t.size; ++q) {
    if (q == t.rank) continue;
    copy(block_threads(), oneshot_slot(t, q, t.rank, sequence) + part.begin,
         b.input(a.src, q, part.begin), part.count);
  }
  copy_own(a, b, part.begin, part.count);
  if (!arrive_all(t, sequence)) return;
  for (int q = 0; q < t.size; ++q) {
    if (q == t.rank) continue;
    copy(block_threads(), b.output(a.dst, q, part.begin),
         oneshot_slot(t, t.rank, q, sequence) + part.begin, part.count);
  }
}

// Large allgather / alltoall: per step, each rank's piece for q lands in q's inbox (the
// step's half, one slice per writer).  The halves take turns: a peer signals step s + 1 only
// after its reads of step s, so the half of step s is free when step s + 2 writes it.
__device__ void exchange_pipelined(const CollArgs &a, const Blocks &b, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  const Part part = block_part(b.bytes);
  const size_t slice = slice_bytes(t.size);
  uint32_t step = 0;
  for (size_t done = 0; done < part.count; done += slice, ++step) {
    const size_t offset = part.begin + done;
    const size_t len = min(slice, part.count - done);
    const int half = static_cast<int>(step & 1);
    const uint64_t value = flag_value(sequence, step);
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank) continue;
      copy(block_threads(), chunk_inbox(t, q, half) + t.rank * slice, b.input(a.src, q, offset),
           len);
    }
    copy_own(a, b, offset, len);
    signal_peers(t, kFlagArrive, value);
    if (!wait_peers(t, kFlagArrive, value, sequence)) return;
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank) continue;
      copy(block_threads(), b.output(a.dst, q, offset), chunk_inbox(t, t.rank, half) + q * slice,
           len);
    }
  }
  end_barrier(t, sequence);
}

// Registered outputs, any size (allgather, alltoall): each rank writes its block for q
// straight into q's output, a step of kChunkBytes per block at a time (an allgather's input
// step is read from L2 after the first peer); only the outputs need registering.  Pipelined
// when some rank's output is not registered, or some rank's alltoall is in place.
__device__ void exchange_zerocopy(const CollArgs &a, const Blocks &b, uint64_t sequence) {
  __shared__ ZeroCopyBuffers bufs;
  // An alltoall in place would take blocks a peer still has to read: declined, every rank
  // then runs pipelined.
  const bool declines = b.per_peer_input && a.src == a.dst;
  const ZeroCopyStart start =
      zerocopy_start(a, sequence, ZeroCopyNeeds{false, true}, bufs, declines);
  if (start == ZeroCopyStart::kStopped) return;
  if (start == ZeroCopyStart::kUnregistered) return exchange_pipelined(a, b, sequence);
  const DeviceTeam &t = a.team;
  const Part part = block_part(b.bytes);
  for (size_t done = 0; done < part.count; done += kChunkBytes) {
    const size_t offset = part.begin + done;
    const size_t len = min(kChunkBytes, part.count - done);
    for (int q = 0; q < t.size; ++q) {
      const char *from = b.input(a.src, q, offset);
      char *to = b.output(bufs.dst[q], t.rank, offset);
      if (from != to) copy(block_threads(), to, from, len);
    }
  }
  end_barrier(t, sequence);  // every peer wrote its blocks into this rank's output
}

__device__ void run(const CollArgs &a, uint64_t sequence) {
  const size_t bytes = a.count * dtype_size(a.dtype);
  const bool oneshot = a.algo == CollAlgo::kOneShot;
  switch (a.kind) {
    case CollKind::kBroadcast:
      if (a.algo == CollAlgo::kZeroCopy) return broadcast_zerocopy(a, sequence, bytes);
      return oneshot ? broadcast_oneshot(a, sequence, bytes)
                     : broadcast_pipelined(a, sequence, bytes);
    case CollKind::kAllgather:
    case CollKind::kAlltoall: {
      const Blocks blocks{a.kind == CollKind::kAlltoall, bytes};
      if (a.algo == CollAlgo::kZeroCopy) return exchange_zerocopy(a, blocks, sequence);
      return oneshot ? exchange_oneshot(a, blocks, sequence)
                     : exchange_pipelined(a, blocks, sequence);
    }
    case CollKind::kBarrier: arrive_all(a.team, sequence); return;
    default: return;  // the reductions have their own kernels (reduce_coll.cu)
  }
}

__global__ void __launch_bounds__(kCollThreads) move_data(const __grid_constant__ CollArgs a) {
  const uint64_t sequence = *a.team.sequence;
  if (!team_stopped(a.team, sequence)) run(a, sequence);
  finish_block(a.team, sequence);
}

}  // namespace

detail::CollKernel detail::move_kernel() { return move_data; }

}  // namespace cohort::kernels
