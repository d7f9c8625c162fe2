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
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

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
};

// cudaErrorInvalidValue (launching nothing) without words or with a null buffer of nonzero
// bytes.  One block on `stream`.
cudaError_t launch_staged_piece(const StagedPieceArgs &args, cudaStream_t stream);

// cudaSuccess when this process can launch it (a CUDA runtime over a real driver with a device
// the kernel's code runs on): the tests' fake driver answers with an error.
cudaError_t staged_piece_available();

}  // namespace cohort::kernels
