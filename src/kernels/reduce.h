// Launchers of the copy and reduce kernels (primitives.cuh over a whole grid): what host code
// calls to move or combine device buffers on a stream.  Nothing of Cohort's host side.
//
// Both enqueue one kernel on `stream` (none for zero bytes), allocate nothing and make no
// host callback, so they may be captured in a CUDA graph.  They return cudaErrorInvalidValue,
// launching nothing, for arguments outside their contract, else the launch's error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "types.h"

namespace cohort::kernels {

// The grid of a launch; 0 lets the launcher choose (threads: 512; blocks: enough for the
// work, at most as many as fit on the device at once).  threads: a multiple of 32, <= 512;
// blocks x threads < 2^31.
struct LaunchShape {
  int blocks = 0;
  int threads = 0;
};

struct CopyArgs {
  void *dst = nullptr;
  const void *src = nullptr;  // may equal dst; no other overlap
  size_t bytes = 0;
  LaunchShape shape;
};

// dst[0, bytes) = src[0, bytes), any alignment.
cudaError_t launch_copy(const CopyArgs &args, cudaStream_t stream);

struct ReduceArgs {
  void *dst = nullptr;  // may be exactly one of srcs; no other overlap
  const void *srcs[kMaxReduceInputs] = {};
  int nsrcs = 0;     // 1 .. kMaxReduceInputs
  size_t count = 0;  // elements
  DType dtype = DType::kFloat32;
  RedOp op = RedOp::kSum;
  int avg_divisor = 1;  // kAvg: the team size, >= 1; ignored by the other ops
  LaunchShape shape;
};

// dst[i] = srcs[0][i] OP ... OP srcs[nsrcs - 1][i] (and / avg_divisor for kAvg), any
// alignment, with the semantics of primitives.cuh (the host path's, bit for bit).  One input
// with an op other than kAvg is a copy (bytes as they are).
cudaError_t launch_reduce(const ReduceArgs &args, cudaStream_t stream);

}  // namespace cohort::kernels
