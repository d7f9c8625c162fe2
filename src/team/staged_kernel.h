// A small piece of a collective through host memory as one kernel on the stream (the copy in,
// the ready word, the wait for done and the copy out: kernels/staged.h), where the CUDA
// build has it and the process's runtime launches it.  Elsewhere (a build without the CUDA
// toolkit, the tests' fake driver) the stream's copies and memory operations do the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "kernels/ll_line.h"

namespace cohort {

struct StagedKernelPiece {
  const void *in_src = nullptr;  // device → slot
  void *in_dst = nullptr;
  size_t in_bytes = 0;
  const void *out_src = nullptr;  // slot → device
  void *out_dst = nullptr;
  size_t out_bytes = 0;
  uint32_t *ready = nullptr;
  const uint32_t *done = nullptr;
  uint32_t piece = 0;
  uint32_t *finished = nullptr;  // optional: the piece once the output is in device memory
  // Optional, both or neither: the piece as lines (kernels/ll_line.h; ready is not used then).
  kernels::LlLine *lines_in = nullptr;
  kernels::LlLine *lines_out = nullptr;
  double timeout_s = 0;  // the team's COHORT_COLL_TIMEOUT: the kernel waits longer, then ends
};

// Whether this process launches the kernel: probed once (the first answer holds).
bool staged_kernel_usable();

// Enqueues the piece's kernel on `stream`; COHORT_ERR_CUDA with the runtime's words.
Status launch_staged_kernel(const StagedKernelPiece &piece, void *stream);

}  // namespace cohort
