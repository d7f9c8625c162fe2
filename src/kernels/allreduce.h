// Allreduce among the local ranks of a team, over their windows (device_team.h): what
// tl_gpu launches.  Nothing of Cohort's host side.
//
// The launch enqueues one kernel on `stream`, allocates nothing and makes no host callback
// (a CUDA graph may capture it).  Every local rank must launch the same call (same count,
// dtype, op, algorithm), in the same order: block b of one rank trades with block b of the
// others.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "device_team.h"
#include "types.h"

namespace cohort::kernels {

enum class AllreduceAlgo : int {
  // Each rank pushes its whole message to every peer, then reduces all of them: one
  // handshake, for messages up to kOneShotBytes.
  kOneShot = 0,
  // Per pipeline step, each rank reduces one slice of every rank's data and hands its result
  // to the others (reduce-scatter + allgather through the windows): any size.
  kTwoShot = 1,
  // Registered buffers: each rank reduces one slice of the message straight from every rank's
  // input and writes it into every rank's output (reads and writes each byte once); two-shot
  // on every rank when some rank's buffers are not registered.  A team with registrations.
  kZeroCopy = 2,
  // Up to kLlBytes: each rank's message as lines that carry their own flags (NCCL's LL) into
  // every peer's window, reduced as they land: no fence, no separate handshake.
  kLl = 3,
};

struct AllreduceArgs {
  DeviceTeam team;
  const void *src = nullptr;  // may equal dst
  void *dst = nullptr;
  size_t count = 0;  // elements, > 0
  DType dtype = DType::kFloat32;
  RedOp op = RedOp::kSum;
  AllreduceAlgo algo = AllreduceAlgo::kTwoShot;
  BufferRef src_ref{};  // kZeroCopy: where src and dst lie in this rank's registered buffers
  BufferRef dst_ref{};
};

// Thread blocks the launch uses: the same on every rank for the same call.
int allreduce_blocks(const AllreduceArgs &args);

// cudaErrorInvalidValue (launching nothing) for arguments outside the contract: a one-shot
// message over kOneShotBytes, an LL one over kLlBytes, an unknown dtype or op, no elements, more
// ranks than kMaxLocalRanks.
cudaError_t launch_allreduce(const AllreduceArgs &args, cudaStream_t stream);

}  // namespace cohort::kernels
