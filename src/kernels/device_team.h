// The GPU side of a team as kernels see it: plain data, copied by value into every launch
// (so a captured CUDA graph replays with it).  The host object that owns the memory behind
// these pointers is tl_gpu::GpuTransport; kernels never see it.  Host and device code alike
// include this header (no CUDA header needed).
//
// Every local rank owns one window of device memory, exported through CUDA IPC and mapped by
// the others.  Peers push data into the owner's window and then raise a flag there; the
// owner polls its own flags (local reads) and reads its own inbox.
//   flags    one 128-byte line per (writer, block, slot): the writer stores a monotonic
//            64-bit value after its data landed.
//   stop     one 32-bit word (stop_word()): a rank that aborts the team, or whose kernel gave
//            up waiting, writes it into every window, so every rank's kernels stop waiting
//            and later ones do nothing.
//   zerocopy 2 parities x one ZeroCopyDesc: where the owner's buffers of a zero-copy call lie
//            (registered buffers, read by the peers straight from the owner's window).
//   oneshot  2 parities x ranks x kOneShotBytes: each writer's whole message, for the small
//            collectives that read every rank's data at once.
//   ll       2 parities x ranks x kLlSlotBytes: each writer's whole message as lines
//            (ll_line.h: the flag in the data, no separate flag to raise), for the LL
//            allreduce; only LL calls write there, and each line is zeroed once read.
//   chunks   kMaxBlocks x 2 x kChunkBytes: per block, the pieces of the current pipeline step
//            (a reduce-scatter inbox and a gather inbox), for large collectives.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort::kernels {

constexpr int kMaxLocalRanks = 16;             // ranks of one host a GPU team spans
constexpr int kMaxBlocks = 32;                 // thread blocks a collective kernel uses at most
constexpr int kFlagBytes = 128;                // one flag per line: writers never share one
constexpr size_t kOneShotBytes = 64 << 10;     // largest message of a one-shot collective
constexpr size_t kLlBytes = 16 << 10;          // largest message of an LL allreduce, per rank
constexpr size_t kLlSlotBytes = 2 * kLlBytes;  // its lines: 16 bytes carry 8 of payload
constexpr size_t kChunkBytes = 128 << 10;      // one block's inbox for one pipeline step
constexpr int kMaxRegistrations = 1024;        // buffers registered with a team at once

// Flags per (writer, block): one per handshake a kernel runs.
enum FlagSlot : int { kFlagArrive = 0, kFlagResult = 1, kFlagZeroCopy = 2, kFlagSlots = 3 };

// Why a kernel stopped early (the host reads it from pinned memory).
enum StopReason : uint32_t {
  kStopNone = 0,
  kStopAbort = 1,        // by: the local rank whose host aborted (this rank's own included)
  kStopTimeout = 2,      // this rank waited for `peer` longer than the timeout
  kStopPeerTimeout = 3,  // rank `by` waited for `peer` longer than the timeout
};

// What a kernel that stopped early reports: the call, the peer it waited for, who stopped.
struct DeviceFault {
  uint32_t reason;  // StopReason
  int32_t peer;     // local rank waited for, -1 when none
  int32_t by;       // kStopAbort / kStopPeerTimeout: the local rank that stopped the team
  int32_t reserved;
  uint64_t sequence;  // the team's call counter of the stopped call
};

// The stop word a rank writes into every window: its local rank + 1 in the low half, and
// after a timeout the rank it waited for + 1 in the high half (0: an abort).
constexpr uint32_t stop_word(int by, int waited_for) {
  return (static_cast<uint32_t>(waited_for + 1) << 16) | static_cast<uint32_t>(by + 1);
}

// A buffer of a call as its rank registered it (cohort_mem_register): the registration's slot
// in the team's table (the same slot on every rank) and the buffer's offset in it.
struct BufferRef {
  int32_t slot = -1;  // -1: not in a registered buffer
  int32_t reserved = 0;
  uint64_t offset = 0;  // bytes from the registered buffer's start
};

// What a rank tells its peers at the start of a zero-copy call: where its buffers lie.
struct ZeroCopyDesc {
  BufferRef src;
  BufferRef dst;
};

// Where the parts of a window lie: the same on every rank (a function of the rank count).
struct WindowLayout {
  size_t stop_offset;
  size_t zerocopy_offset;
  size_t oneshot_offset;
  size_t ll_offset;
  size_t chunks_offset;
  size_t total_bytes;
};

constexpr size_t flag_offset(int writer, int block, int slot) {
  return ((static_cast<size_t>(writer) * kMaxBlocks + block) * kFlagSlots + slot) * kFlagBytes;
}

constexpr WindowLayout window_layout(int ranks) {
  WindowLayout l{};
  l.stop_offset = flag_offset(kMaxLocalRanks, 0, 0);
  l.zerocopy_offset = l.stop_offset + kFlagBytes;
  l.oneshot_offset =
      l.zerocopy_offset + (2 * sizeof(ZeroCopyDesc) + kFlagBytes - 1) / kFlagBytes * kFlagBytes;
  l.ll_offset = l.oneshot_offset + 2 * static_cast<size_t>(ranks) * kOneShotBytes;
  l.chunks_offset = l.ll_offset + 2 * static_cast<size_t>(ranks) * kLlSlotBytes;
  l.total_bytes = l.chunks_offset + size_t{kMaxBlocks} * 2 * kChunkBytes;
  return l;
}

struct DeviceTeam {
  int32_t rank;        // this rank's local rank
  int32_t size;        // local ranks in the team
  int32_t max_blocks;  // blocks per kernel that every rank's GPU holds at once
  WindowLayout layout;
  char *windows[kMaxLocalRanks];  // every local rank's window, mapped here (own included)
  // Device memory, kMaxRegistrations x kMaxLocalRanks: [slot * kMaxLocalRanks + q] is local
  // rank q's registered buffer `slot` as mapped here (this rank's own included); null until
  // the team registers its first buffer, the same on every rank.
  char *const *registered;
  // This rank's call counter in device memory: each collective kernel reads it and its last
  // block advances it, so replays of a captured graph keep counting.
  unsigned long long *sequence;
  unsigned int *blocks_done;  // blocks of the running call that finished (the last resets it)
  unsigned int *fault_claim;  // device memory: the first block that stops early takes it
  // Host-mapped pinned memory, written by the block that took fault_claim (atomics on host
  // memory are not atomic everywhere, plain stores are).  Aborts reach kernels only through
  // the stop word in the windows: kernels never read host memory.
  volatile DeviceFault *fault;
  uint64_t timeout_ns;  // a wait longer than this stops the kernel (kStopTimeout)
};

}  // namespace cohort::kernels
