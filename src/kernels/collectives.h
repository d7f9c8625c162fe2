// Allreduce, broadcast, reduce, allgather, reduce-scatter, alltoall and barrier among the local
// ranks of a team, over their windows (device_team.h): what tl_gpu launches, every collective
// through launch_collective (allreduce.h names allreduce's algorithms for the kernel tests and
// launches through here too).  Nothing of Cohort's host side.
//
// As allreduce: one kernel on `stream`, nothing allocated, no host callback (a CUDA graph may
// capture it); every local rank launches the same calls (same kind, count, dtype, op, root,
// algorithm) in the same order, and kernels of any kind may follow each other on one team.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "device_team.h"
#include "types.h"

namespace cohort::kernels {

enum class CollKind : int {
  kBroadcast = 0,
  kReduce,
  kAllgather,
  kReduceScatter,
  kAlltoall,
  kBarrier,
  kAllreduce,  // kPipelined is allreduce.h's two-shot (allreduce.h: the same launch, its names)
};

enum class CollAlgo : int {
  // Every rank's part lands in the one-shot slots of the ranks that need it, one handshake:
  // up to kOneShotBytes per rank (count x element size).
  kOneShot = 0,
  // Any size: per block, steps through the chunk inboxes (two halves in turn, so a step's
  // copies overlap the previous step's), ending with end_barrier().
  kPipelined = 1,
  // Registered buffers (every collective but the barrier): every rank's buffers
  // straight from the others' memory, no copy through the windows (device_team.h's
  // ZeroCopyDesc says where they lie); the same call as kPipelined on every rank when some
  // rank's buffer the kernel reaches is not registered.
  kZeroCopy = 2,
  // Allreduce up to kLlBytes per rank: every rank's message as lines (ll_line.h) into every
  // peer's LL slots, each line carrying its own flag: no fence, no handshake of its own.
  kLl = 3,
};

struct CollArgs {
  DeviceTeam team;
  CollKind kind = CollKind::kBarrier;
  CollAlgo algo = CollAlgo::kPipelined;
  // As cohort.h's blocking calls: src read on the root only (broadcast), dst written on the
  // root only (reduce); in place as cohort.h says for each collective.
  const void *src = nullptr;
  void *dst = nullptr;
  // cohort.h's count: elements per rank (allgather: each rank's; reduce-scatter: each rank's
  // result; alltoall: per peer); > 0 except for a barrier.
  size_t count = 0;
  DType dtype = DType::kFloat32;
  RedOp op = RedOp::kSum;  // reduce and reduce-scatter
  int root = 0;            // broadcast and reduce: a local rank
  // Where src and dst lie in this rank's registered buffers (kZeroCopy; slot -1: not there).
  BufferRef src_ref{};
  BufferRef dst_ref{};
};

constexpr int kCollThreads = 512;  // threads of every block of a collective kernel

// Thread blocks the launch uses: the same on every rank for the same call.
int collective_blocks(const CollArgs &args);

// cudaErrorInvalidValue (launching nothing) for arguments outside the contract: an unknown
// kind, dtype, op or algorithm (kZeroCopy: any but the barrier, on a team with
// registrations; kLl: allreduce), no elements, a root outside the team, a
// one-shot message over kOneShotBytes, an LL one over kLlBytes, more ranks than
// kMaxLocalRanks.
cudaError_t launch_collective(const CollArgs &args, cudaStream_t stream);

namespace detail {
// The kernels of allreduce, reduce and reduce-scatter (reduce_coll.cu) and of the others
// (move.cu).
using CollKernel = void (*)(CollArgs);
CollKernel reduce_kernel_of(DType dtype, RedOp op);
CollKernel move_kernel();
}  // namespace detail

}  // namespace cohort::kernels
