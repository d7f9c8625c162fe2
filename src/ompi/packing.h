// A side of a call whose datatype has gaps travels as its packed bytes: MPI_Pack of each of its
// blocks, one after the other, into one contiguous block before the call where the side is
// read, and MPI_Unpack back after it where it is written.  The bytes are the type map's data in
// order, which is what a rank with a contiguous type of the same signature sends and expects,
// so ranks whose layouts differ still take part in one call.  Host memory only: Debian's Open
// MPI cannot pack device memory, so device buffers are staged to the host first.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "mpi_map.h"

namespace cohort::ompi {

// One side's elements as MPI describes them: blocks of counts[i] elements of `type`, each at
// displs[i] extents from the buffer's address (the collectives without counts per rank have one
// block at 0).
struct MpiBlocks {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  TypeLayout layout;
  std::vector<size_t> counts;
  std::vector<MPI_Aint> displs;

  // Bytes of data in block i, and in all of them.
  size_t block_bytes(size_t i) const { return counts[i] * layout.size; }
  size_t total_bytes() const;
  // Where each block's bytes start once packed: the sum of the bytes of the blocks before it.
  std::vector<size_t> packed_offsets() const;
};

// Packs every block of `buffer` (host memory) into `packed` at its packed offset; false when
// MPI refused (a type whose one element holds more than INT_MAX bytes).
bool pack_blocks(const MpiBlocks &blocks, const void *buffer, char *packed);
// Unpacks every block from `packed` into `buffer` (host memory): only the type map's bytes of
// the buffer are written, its gaps keep what they held.
bool unpack_blocks(const MpiBlocks &blocks, const char *packed, void *buffer);

}  // namespace cohort::ompi
