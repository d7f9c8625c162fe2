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

namespace cohort::kernels {

// The value announcing step `step` (< 2^24) of call `sequence`.
__device__ __forceinline__ uint64_t flag_value(uint64_t sequence, uint32_t step) {
  return ((sequence + 1) << 24) | (step + 1);
}

__device__ __forceinline__ uint64_t *flag_at(const DeviceTeam &team, int owner, int writer,
                                             int slot) {
  return reinterpret_cast<uint64_t *>(team.windows[owner] + flag_offset(writer, blockIdx.x, slot));
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Tells every peer (not this rank) that this block's data for `slot` is in its window.
__device__ inline void signal_peers(const DeviceTeam &team, int slot, uint64_t value) {
  __syncthreads();  // every thread's writes are done before one thread publishes them
  if (threadIdx.x != 0) return;
  __threadfence_system();
  for (int peer = 0; peer < team.size; ++peer) {
    if (peer == team.rank) continue;
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> flag(
        *flag_at(team, peer, team.rank, slot));
    flag.store(value, cuda::memory_order_release);
  }
}

constexpr int kNotAborted = -2;

// -1 when this rank's host aborted the team, the local rank of the peer that did, else
// kNotAborted.
__device__ inline int aborted_by(const DeviceTeam &team) {
  if (*team.abort != 0) return -1;
  const volatile uint32_t *word = reinterpret_cast<const volatile uint32_t *>(
      team.windows[team.rank] + team.layout.abort_offset);
  const uint32_t value = *word;
  return value != 0 ? static_cast<int>(value) - 1 : kNotAborted;
}

// Records why the kernel stops (the first fault of the team wins).
__device__ inline void report_stop(const DeviceTeam &team, StopReason reason, int peer, int aborter,
                                   uint64_t sequence) {
  if (atomicCAS(team.fault_claim, 0u, 1u) != 0u) return;
  team.fault->peer = peer;
  team.fault->aborter = aborter;
  team.fault->sequence = sequence;
  __threadfence_system();
  team.fault->reason = reason;  // last: the host reads the others once it sees a reason
  __threadfence_system();
}

// Waits until every peer's flag for `slot` reached `value`; false when the team aborted or a
// peer took longer than the timeout (the kernel must then end).
__device__ inline bool wait_peers(const DeviceTeam &team, int slot, uint64_t value,
                                  uint64_t sequence) {
  bool stop = false;
  const int peer = threadIdx.x;
  if (peer < team.size && peer != team.rank) {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> flag(
        *flag_at(team, team.rank, peer, slot));
    uint64_t start = 0;
    for (unsigned spins = 1; flag.load(cuda::memory_order_acquire) < value; ++spins) {
      if (spins % 64 != 0) continue;
      const int aborter = aborted_by(team);
      if (aborter != kNotAborted) {
        report_stop(team, kStopAbort, peer, aborter, sequence);
        stop = true;
        break;
      }
      const uint64_t now = global_ns();
      if (start == 0) start = now;
      if (now - start > team.timeout_ns) {
        report_stop(team, kStopTimeout, peer, -1, sequence);
        stop = true;
        break;
      }
      __nanosleep(64);  // other ranks' blocks on this GPU get the issue slots
    }
  }
  return !__syncthreads_or(stop);
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
