#include "packing.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>

namespace cohort::ompi {
namespace {

// MPI_Pack and MPI_Unpack count bytes in an int: a block moves in pieces of at most this many
// elements.
size_t elements_per_piece(size_t element_bytes) {
  return element_bytes == 0 ? SIZE_MAX : std::max<size_t>(1, INT_MAX / element_bytes);
}

// Calls `move(element_address, elements, packed_offset)` for each piece of each block.
template <typename Move>
bool for_each_piece(const MpiBlocks &blocks, const void *buffer, Move move) {
  if (blocks.layout.size > static_cast<size_t>(INT_MAX)) return false;
  const size_t per_piece = elements_per_piece(blocks.layout.size);
  const std::vector<size_t> offsets = blocks.packed_offsets();
  const char *base = static_cast<const char *>(buffer);
  for (size_t i = 0; i < blocks.counts.size(); ++i) {
    for (size_t done = 0; done < blocks.counts[i];) {
      const size_t n = std::min(per_piece, blocks.counts[i] - done);
      const MPI_Aint element = blocks.displs[i] + static_cast<MPI_Aint>(done);
      if (!move(base + element * blocks.layout.extent, static_cast<int>(n),
                offsets[i] + done * blocks.layout.size)) {
        return false;
      }
      done += n;
    }
  }
  return true;
}

}  // namespace

size_t MpiBlocks::total_bytes() const {
  return std::accumulate(counts.begin(), counts.end(), size_t{0}) * layout.size;
}

std::vector<size_t> MpiBlocks::packed_offsets() const {
  std::vector<size_t> offsets(counts.size());
  size_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    offsets[i] = at;
    at += block_bytes(i);
  }
  return offsets;
}

bool pack_blocks(const MpiBlocks &blocks, const void *buffer, char *packed) {
  return for_each_piece(blocks, buffer, [&](const char *from, int n, size_t to) {
    int position = 0;
    const int bytes = n * static_cast<int>(blocks.layout.size);
    return MPI_Pack(from, n, blocks.type, packed + to, bytes, &position, MPI_COMM_SELF) ==
           MPI_SUCCESS;
  });
}

bool unpack_blocks(const MpiBlocks &blocks, const char *packed, void *buffer) {
  return for_each_piece(blocks, buffer, [&](const char *to, int n, size_t from) {
    int position = 0;
    const int bytes = n * static_cast<int>(blocks.layout.size);
    return MPI_Unpack(packed + from, bytes, &position, const_cast<char *>(to), n, blocks.type,
                      MPI_COMM_SELF) == MPI_SUCCESS;
  });
}

}  // namespace cohort::ompi
