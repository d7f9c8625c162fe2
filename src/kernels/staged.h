// One small piece of a collective that runs through host memory (team/coll_staged.cc), as one
// kernel instead of four stream operations: it copies the piece's input from device memory into
// its page-locked slot, announces it (writes the piece's number into the ready word), waits
// until the host's collective wrote the number into the done word, and copies the output from
// the slot back to device memory.  The slot and the words are page-locked host memory mapped
// at the same address on the device.  Nothing of Cohort's host side.
//
// The copies and stream memory operations it replaces cost a few microseconds each on the
// copy engines (more with ranks sharing a GPU under MPS); the kernel's stores and loads cross
// PCIe once each way.  Meant for pieces of tens of KB at most: its loads from host memory are
// round trips.
//
// Pieces of at most kLlMaxBytes may go as lines instead (ll_line.h): the kernel writes its input
// as lines whose flags say it landed (no fence, no ready word), and takes the output from lines
// the host wrote the same way (no done word to poll first, no fence): one round trip across
// PCIe each way instead of two.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ll_line.h"

namespace cohort::kernels {

struct StagedPieceArgs {
  const void *in_src = nullptr;  // device → slot (in_bytes may be 0)
  void *in_dst = nullptr;
  size_t in_bytes = 0;
  const void *out_src = nullptr;  // slot → device, once done reached piece (out_bytes may be 0)
  void *out_dst = nullptr;
  size_t out_bytes = 0;
  uint32_t *ready = nullptr;       // written with `piece` once the input is in the slot
  const uint32_t *done = nullptr;  // waited for until (int32_t)(*done - piece) >= 0
  uint32_t piece = 0;
  // Optional: written with `piece` once the output is in device memory (a blocking caller
  // polls it instead of waiting for the kernel's end); never written when giving up.
  uint32_t *finished = nullptr;
  // The host writes done however its collective ends (at the latest at its own timeout); past
  // this the kernel stops waiting anyway and writes no output, so that it never holds the GPU
  // forever.
  uint64_t give_up_ns = 0;
  // Both set: the piece goes as lines (in_bytes and out_bytes at most kLlMaxBytes), and ready,
  // in_dst and out_src are not used.  ll_in gets ll_lines(in_bytes) lines flagged with
  // `piece`; the output is taken from ll_lines(out_bytes) lines at ll_out once their flags are
  // `piece`, and those lines are zeroed then.  done is read beside them: once it reached the
  // piece, lines that still are not the piece's mean the host ended it without them (a later
  // piece wrote over them), and the kernel writes no output.
  LlLine *ll_in = nullptr;
  LlLine *ll_out = nullptr;
};

// cudaErrorInvalidValue (launching nothing) without words (or lines) or with a null buffer of
// nonzero bytes, or lines for more than kLlMaxBytes.  One block on `stream`.
cudaError_t launch_staged_piece(const StagedPieceArgs &args, cudaStream_t stream);

// cudaSuccess when this process can launch it (a CUDA runtime over a real driver with a device
// the kernel's code runs on): the tests' fake driver answers with an error.
cudaError_t staged_piece_available();

}  // namespace cohort::kernels
