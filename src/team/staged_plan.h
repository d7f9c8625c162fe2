// How a collective on device memory runs through host memory: its pieces, each a host
// collective on a slot of page-locked staging memory, with the copies around it.  A piece's
// input is copied from the device into its slot, the host path runs the piece on the slot, and
// its output is copied back.  Elementwise collectives (allreduce, reduce, broadcast) are cut
// into pieces of at most `chunk_bytes`, so that a stream copies one piece while the wire
// carries another; the others are one piece.  Elementwise collectives run in place on the
// slot, whether the call is in place or not: the input is copied in where the output is copied
// out from, and a host collective in place reads and writes one buffer instead of two (the host
// path's allreduce of 8 MB took 1.85 ms in place against 2.37 out of place between 2 fake hosts,
// and 6.4 against 12.6 ms at 4 x 2; device call 39).  The others' buffers that overlap (in
// place, by NCCL's conventions) overlap the same way in the slot.  Pure: the same call gives the
// same pieces on every rank, which run them as that many collectives in the same order.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/call.h"

namespace cohort {

// Bytes copied between a device buffer (from `device_offset`) and a slot (from `slot_offset`).
struct StagedCopy {
  size_t device_offset = 0;
  size_t slot_offset = 0;
  size_t bytes = 0;  // 0: nothing to copy
};

struct StagedPiece {
  size_t count = 0;      // the host collective's count
  bool has_src = false;  // the host collective's src: the slot at src_offset
  bool has_dst = false;  // and its dst
  size_t src_offset = 0;
  size_t dst_offset = 0;
  StagedCopy in;   // the call's src → slot, before the piece
  StagedCopy out;  // slot → the call's dst, after it
};

struct StagedPlan {
  size_t slot_bytes = 0;  // every piece fits one slot
  std::vector<StagedPiece> pieces;
};

// Where a second buffer starts in staging memory: `bytes` rounded up to 256.
size_t staged_aligned(size_t bytes);

// `call` as checked by the team (count, buffers, root); `rank` of `size`.
StagedPlan plan_staged(const coll::Call &call, int rank, int size, size_t chunk_bytes);

// Whether the collective is cut into pieces (each piece is the same collective on a part).
bool staged_elementwise(coll::Collective c);

}  // namespace cohort
