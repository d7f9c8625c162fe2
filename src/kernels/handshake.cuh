// Flags between the ranks of a team (device_team.h): a block signals a peer after its data
// landed in the peer's window, and waits for its own flags, giving up on an abort or a
// timeout.  Device code only.
//
// Contract: signal_peers() is called by every thread of a block after the block wrote what
// the flag announces; wait_peers() by every thread of a block, and returns the same answer
// in every thread.  Values are monotonic over the life of a team: flag_value() of a later
// (call, step) is larger, so memory that starts zeroed never needs a reset.
#pragma once

#include <cuda/atomic>

#include <cstdint>

#include "device_team.h"
#include "global_ns.cuh"

namespace cohort::kernels {

// The value announcing step `step` (< 2^24) of call `sequence`.
__device__ __forceinline__ uint64_t flag_value(uint64_t sequence, uint32_t step) {
  return ((sequence + 1) << 24) | (step + 1);
}

__device__ __forceinline__ uint64_t *flag_at(const DeviceTeam &team, int owner, int writer,
                                             int slot) {
  return reinterpret_cast<uint64_t *>(team.windows[owner] + flag_offset(writer, blockIdx.x, slot));
}

// Tells `peer` (every peer but this rank when -1) that this block's data for `slot` is in
// place.
__device__ inline void signal_peers(const DeviceTeam &team, int slot, uint64_t value,
                                    int peer = -1) {
  __syncthreads();  // every thread's writes are done before one thread publishes them
  if (threadIdx.x != 0) return;
  __threadfence_system();  // one fence publishes them to every peer: relaxed stores follow
  for (int q = 0; q < team.size; ++q) {
    if (q == team.rank || (peer >= 0 && q != peer)) continue;
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> flag(*flag_at(team, q, team.rank, slot));
    flag.store(value, cuda::memory_order_relaxed);
  }
}

// Why this rank's kernels must stop: this rank's stop word.
struct Stop {
  StopReason reason = kStopNone;
  int by = -1;    // the local rank that stopped the team (this rank's own index: its host)
  int peer = -1;  // the rank a timed-out rank waited for
};

// Only device memory is read: a read of the host's pinned memory crosses PCIe (about a
// microsecond), and the host's abort writes this rank's stop word too.
__device__ inline Stop stop_of(const DeviceTeam &team) {
  Stop stop;
  const uint32_t word = *reinterpret_cast<const volatile uint32_t *>(team.windows[team.rank] +
                                                                     team.layout.stop_offset);
  if (word == 0) return stop;
  stop.by = static_cast<int>(word & 0xffff) - 1;  // the local rank that wrote the word
  stop.peer = static_cast<int>(word >> 16) - 1;
  stop.reason = stop.peer >= 0 ? kStopPeerTimeout : kStopAbort;
  return stop;
}

// Records why the kernel stops (the first fault of this rank wins); a timeout also writes the
// stop word into every window, so the other ranks' kernels stop too instead of waiting out
// their own timeouts.
__device__ inline void report_stop(const DeviceTeam &team, StopReason reason, int peer, int by,
                                   uint64_t sequence) {
  if (atomicCAS(team.fault_claim, 0u, 1u) != 0u) return;
  team.fault->peer = peer;
  team.fault->by = by;
  team.fault->sequence = sequence;
  __threadfence_system();
  team.fault->reason = reason;  // last: the host reads the others once it sees a reason
  if (reason == kStopTimeout) {
    for (int q = 0; q < team.size; ++q) {
      *reinterpret_cast<volatile uint32_t *>(team.windows[q] + team.layout.stop_offset) =
          stop_word(team.rank, peer);
    }
  }
  __threadfence_system();
}

// At the start of a collective kernel, every thread of a block: true when the team stopped
// (an abort, a timeout here or on a peer), so the kernel must neither write nor signal
// anything: peers would take its data for a later call's.
__device__ inline bool team_stopped(const DeviceTeam &team, uint64_t sequence) {
  bool stopped = false;
  if (threadIdx.x == 0) {
    const Stop stop = stop_of(team);
    stopped = stop.reason != kStopNone || *reinterpret_cast<volatile unsigned *>(team.fault_claim);
    if (stop.reason != kStopNone) report_stop(team, stop.reason, stop.peer, stop.by, sequence);
  }
  return __syncthreads_or(stopped);
}

// Waits until the flag for `slot` of `only` (every peer when -1) reached `value`; false when
// the team stopped or a peer took longer than the timeout (the kernel must then end).
__device__ inline bool wait_peers(const DeviceTeam &team, int slot, uint64_t value,
                                  uint64_t sequence, int only = -1) {
  bool stop = false;
  const int peer = threadIdx.x;
  if (peer < team.size && peer != team.rank && (only < 0 || peer == only)) {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> flag(
        *flag_at(team, team.rank, peer, slot));
    uint64_t start = 0;
    for (unsigned spins = 1; flag.load(cuda::memory_order_acquire) < value; ++spins) {
      if (spins % 64 != 0) continue;
      const Stop stopped = stop_of(team);
      if (stopped.reason != kStopNone) {
        report_stop(team, stopped.reason, stopped.reason == kStopPeerTimeout ? stopped.peer : peer,
                    stopped.by, sequence);
        stop = true;
        break;
      }
      const uint64_t now = global_ns();
      if (start == 0) start = now;
      if (now - start > team.timeout_ns) {
        report_stop(team, kStopTimeout, peer, team.rank, sequence);
        stop = true;
        break;
      }
      __nanosleep(64);  // other ranks' blocks on this GPU get the issue slots
    }
  }
  return !__syncthreads_or(stop);
}

// The step of the end-of-call handshake (end_barrier): above every real step.
constexpr uint32_t kLastStep = (1u << 24) - 2;

// Every rank of the team got here: the kernels that write into their peers' chunk inboxes
// end with it, after their last read of their own, so the next call may write into them at
// once.  false when the team stopped.
__device__ inline bool end_barrier(const DeviceTeam &team, uint64_t sequence) {
  const uint64_t value = flag_value(sequence, kLastStep);
  signal_peers(team, kFlagResult, value);
  return wait_peers(team, kFlagResult, value, sequence);
}

// The end of every block of a collective kernel: the last one advances the call counter.
__device__ inline void finish_block(const DeviceTeam &team, uint64_t sequence) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(team.blocks_done, 1u) == gridDim.x - 1) {
    *team.blocks_done = 0;
    *team.sequence = sequence + 1;
  }
}

}  // namespace cohort::kernels
