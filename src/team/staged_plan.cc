#include "team/staged_plan.h"

#include <algorithm>
#include <cstdint>

#include "coll/dtype.h"

namespace cohort {
namespace {

constexpr size_t kAlign = 256;  // where a slot's second buffer starts

// Bytes of each side of a whole (uncut) call on this rank.
void side_bytes(const coll::Call &c, int size, size_t elem, size_t *src, size_t *dst) {
  const size_t block = c.count * elem;
  const size_t all = block * static_cast<size_t>(size);
  switch (c.collective) {
    case coll::Collective::kAllgather: *src = block, *dst = all; break;
    case coll::Collective::kReduceScatter: *src = all, *dst = block; break;
    case coll::Collective::kAlltoall: *src = all, *dst = all; break;
    case coll::Collective::kBarrier: *src = 0, *dst = 0; break;
    default: *src = block, *dst = block; break;
  }
}

// One piece of the whole call.  Sides that overlap keep their distance in the slot.
StagedPlan whole(const coll::Call &c, int rank, int size, size_t elem) {
  size_t src_bytes = 0, dst_bytes = 0;
  side_bytes(c, size, elem, &src_bytes, &dst_bytes);
  StagedPiece p;
  p.count = c.count;
  p.has_src = coll::uses_src(c, rank) && src_bytes > 0;
  p.has_dst = coll::uses_dst(c, rank) && dst_bytes > 0;
  const auto src = reinterpret_cast<uintptr_t>(c.src), dst = reinterpret_cast<uintptr_t>(c.dst);
  const bool overlap = p.has_src && p.has_dst && src < dst + dst_bytes && dst < src + src_bytes;
  StagedPlan plan;
  if (staged_elementwise(c.collective)) {  // in place: both sides at the slot's start
    plan.slot_bytes = std::max(p.has_src ? src_bytes : 0, p.has_dst ? dst_bytes : 0);
  } else if (overlap) {
    const uintptr_t low = std::min(src, dst);
    p.src_offset = src - low;
    p.dst_offset = dst - low;
    plan.slot_bytes = std::max(src + src_bytes, dst + dst_bytes) - low;
  } else {
    p.dst_offset = p.has_src ? staged_aligned(src_bytes) : 0;
    plan.slot_bytes = p.dst_offset + (p.has_dst ? dst_bytes : 0);
  }
  if (p.has_src) p.in = {0, p.src_offset, src_bytes};
  if (p.has_dst) p.out = {0, p.dst_offset, dst_bytes};
  plan.pieces.push_back(p);
  return plan;
}

}  // namespace

size_t staged_aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

bool staged_elementwise(coll::Collective c) {
  return c == coll::Collective::kAllreduce || c == coll::Collective::kReduce ||
         c == coll::Collective::kBroadcast;
}

StagedPlan plan_staged(const coll::Call &c, int rank, int size, size_t chunk_bytes) {
  const size_t elem = coll::dtype_size(c.dtype);
  if (!staged_elementwise(c.collective) || c.count * elem <= chunk_bytes) {
    return whole(c, rank, size, elem);
  }
  const size_t per_piece = std::max<size_t>(1, chunk_bytes / elem);
  const bool has_src = coll::uses_src(c, rank), has_dst = coll::uses_dst(c, rank);
  StagedPlan plan;
  plan.slot_bytes = per_piece * elem;  // in place, as whole()
  for (size_t first = 0; first < c.count; first += per_piece) {
    StagedPiece p;
    p.count = std::min(per_piece, c.count - first);
    p.has_src = has_src;
    p.has_dst = has_dst;
    const size_t offset = first * elem, bytes = p.count * elem;
    if (has_src) p.in = {offset, p.src_offset, bytes};
    if (has_dst) p.out = {offset, p.dst_offset, bytes};
    plan.pieces.push_back(p);
  }
  return plan;
}

}  // namespace cohort
