// A collective call's checks, all before any traffic and alike on every rank that passes the
// same arguments: types and ops, the root, sizes that fit an address space, buffers, memory
// kinds.  Nothing is written on a refused call.
#include "coll/dtype.h"
#include "core/cuda_driver.h"
#include "team/coll_front.h"

namespace cohort {
namespace {

bool reduces(coll::Collective c) {
  return c == coll::Collective::kAllreduce || c == coll::Collective::kReduce ||
         c == coll::Collective::kReduceScatter || c == coll::Collective::kScan ||
         c == coll::Collective::kExscan || c == coll::Collective::kReduceScatterv;
}

bool prefix(coll::Collective c) {
  return c == coll::Collective::kScan || c == coll::Collective::kExscan;
}

bool rooted(coll::Collective c) {
  return c == coll::Collective::kReduce || c == coll::Collective::kBroadcast ||
         c == coll::Collective::kGather || c == coll::Collective::kScatter ||
         c == coll::Collective::kGatherv || c == coll::Collective::kScatterv;
}

// Collectives whose larger buffer holds a block per rank (gather's and scatter's on the root;
// checked on every rank so that every rank refuses alike).
bool blocked(coll::Collective c) {
  return c == coll::Collective::kAllgather || c == coll::Collective::kReduceScatter ||
         c == coll::Collective::kAlltoall || c == coll::Collective::kGather ||
         c == coll::Collective::kScatter;
}

// Collectives with no GPU algorithm: device memory is refused by name, not by the table.
bool host_only(coll::Collective c) {
  return c == coll::Collective::kGather || c == coll::Collective::kScatter || prefix(c) ||
         coll::is_vcollective(c);
}

}  // namespace

Status check_on_team_gpu(const char *what, const char *which, BufferPlace place, int device) {
  if (place.kind != COHORT_MEMORY_CUDA_DEVICE || device < 0 || place.device < 0 ||
      place.device == device) {
    return COHORT_SUCCESS;
  }
  return failf(COHORT_ERR_INVALID_ARG,
               "%s: %s is device memory of GPU %d; the team's GPU on this rank is GPU %d (CUDA "
               "ordinals of this process)",
               what, which, place.device, device);
}

Status check_stream_buffer(const char *what, const char *which, BufferPlace place,
                           const char *blocking) {
  if (place.kind == COHORT_MEMORY_CUDA_DEVICE) return COHORT_SUCCESS;
  return failf(COHORT_ERR_INVALID_ARG,
               "%s: %s is %s memory; stream-ordered calls take device memory of the team's GPU "
               "(%s takes host memory)",
               what, which, cohort_memory_kind_name(place.kind), blocking);
}

namespace {

// The most host-like kind that still describes both buffers (device beats managed beats
// pinned beats pageable).  A blocking call refuses device memory mixed with any other kind; a
// stream-ordered one (`stream`) refuses any kind but device memory; both refuse another GPU's.
Status call_memory(const char *name, const void *src, const void *dst, bool stream, int device,
                   cohort_memory_kind_t *out) {
  const BufferPlace s = src ? place_of_recent(src) : BufferPlace{};
  const BufferPlace d = dst == src ? s : dst ? place_of_recent(dst) : BufferPlace{};
  Status status = COHORT_SUCCESS;
  if (stream) {
    // The names are built only for a refusal: this runs on every stream call.
    auto device_only = [&](const char *which, BufferPlace place) -> Status {
      if (place.kind == COHORT_MEMORY_CUDA_DEVICE) return COHORT_SUCCESS;
      const std::string what = std::string(name) + "_stream",
                        blocking = "cohort_" + std::string(name);
      return check_stream_buffer(what.c_str(), which, place, blocking.c_str());
    };
    if (src) status = device_only("sendbuf", s);
    if (dst && !is_error(status)) status = device_only("recvbuf", d);
  } else if (src && dst &&
             (s.kind == COHORT_MEMORY_CUDA_DEVICE) != (d.kind == COHORT_MEMORY_CUDA_DEVICE)) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "%s: sendbuf is %s memory and recvbuf %s: pass both on the device or both in "
                 "host memory",
                 name, cohort_memory_kind_name(s.kind), cohort_memory_kind_name(d.kind));
  }
  if (!is_error(status)) status = check_on_team_gpu(name, "sendbuf", s, device);
  if (!is_error(status)) status = check_on_team_gpu(name, "recvbuf", d, device);
  *out = std::max(s.kind, d.kind);
  return status;
}

// NCCL's in-place conventions: the same buffer, or for allgather / reduce-scatter the rank's
// block of the larger one, for gather / scatter the root's block of the root's larger one
// (the other ranks have one buffer).
bool in_place(const CollCall &c, int rank, size_t elem) {
  const char *s = static_cast<const char *>(c.src);
  const char *d = static_cast<const char *>(c.dst);
  if (s == nullptr || d == nullptr) return false;
  const size_t block = static_cast<size_t>(rank) * c.count * elem;
  switch (c.collective) {
    case coll::Collective::kAllgather: return s == d + block;
    case coll::Collective::kReduceScatter: return d == s + block;
    case coll::Collective::kGather: return rank == c.root && s == d + block;
    case coll::Collective::kScatter: return rank == c.root && d == s + block;
    default: return s == d;
  }
}

// The uniform collectives' buffers: NULL only where unused (or nothing moves).
Status check_buffers(const CollCall &c, int rank, size_t elem, coll::CollArgs *args) {
  if (c.count == 0) return COHORT_SUCCESS;
  const bool src_used = coll::uses_src(c, rank), dst_used = coll::uses_dst(c, rank);
  if ((src_used && c.src == nullptr) || (dst_used && c.dst == nullptr)) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: %s is NULL with count %zu",
                 coll::collective_name(c.collective),
                 src_used && c.src == nullptr ? "sendbuf" : "recvbuf", c.count);
  }
  args->in_place = in_place(c, rank, elem);
  return COHORT_SUCCESS;
}

}  // namespace

// `count` elements of `elem` bytes, `blocks` times: a size that wraps size_t, or that no
// buffer can have, is a wrong count.
Status check_count(const char *what, size_t count, size_t elem, size_t blocks) {
  size_t bytes = 0, total = 0;
  const bool wraps =
      __builtin_mul_overflow(count, elem, &bytes) || __builtin_mul_overflow(bytes, blocks, &total);
  if (!wraps && total < kMaxBufferBytes) return COHORT_SUCCESS;
  std::string times = blocks > 1 ? strprintf(" x %zu ranks", blocks) : "";
  return failf(COHORT_ERR_INVALID_ARG, "%s: count=%zu is not a buffer size: %zu x %zu bytes%s %s",
               what, count, count, elem, times.c_str(),
               wraps ? "wraps size_t" : "is more than any process can hold (2^56 bytes)");
}

Status CollFront::check(const CollCall &c, coll::CollArgs *args) const {
  const char *name = coll::collective_name(c.collective);
  Status s =
      reduces(c.collective) ? coll::check_reduction(c.dtype, c.op) : coll::check_dtype(c.dtype);
  if (is_error(s)) return failf(s, "%s: %s", name, last_error().c_str());
  // A prefix average would divide by r + 1 on rank r; MPI has no such op, and a SUM scan
  // divided by the rank's position says what it means.
  if (prefix(c.collective) && c.op == COHORT_AVG) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "%s: op avg has no prefix form (scan with sum and divide by rank + 1, or by "
                 "rank for exscan)",
                 name);
  }
  if (rooted(c.collective) && (c.root < 0 || c.root >= info_.size)) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: root=%d is outside the team (size %d)", name, c.root,
                 info_.size);
  }
  const size_t elem = coll::dtype_size(c.dtype);
  s = check_count(name, c.count, elem, blocked(c.collective) ? info_.size : 1);
  if (is_error(s)) return s;
  args->collective = c.collective;
  args->count = c.count;
  args->op = reduces(c.collective) ? c.op : COHORT_SUM;
  args->root = c.root;
  args->rank = info_.rank;
  args->size = info_.size;
  args->elem_size = elem;
  args->ring = &info_.plan.rings[0];
  args->ring_position = info_.plan.ring_position[0][info_.rank];
  args->rings = &info_.plan.rings;
  args->ring_positions = &info_.plan.ring_position;
  args->node_of_rank = &info_.layout.node_of_rank;
  if (c.collective == coll::Collective::kBarrier) return COHORT_SUCCESS;
  const bool vcall = coll::is_vcollective(c.collective);
  s = vcall ? check_vcall(c, args) : check_buffers(c, info_.rank, elem, args);
  if (is_error(s) || (!vcall && c.count == 0)) return s;
  const bool src_used = coll::uses_src(c, info_.rank), dst_used = coll::uses_dst(c, info_.rank);
  s = call_memory(name, src_used ? c.src : nullptr, dst_used ? c.dst : nullptr, c.stream_ordered,
                  info_.peers[info_.rank].cuda_device, &args->memory);
  if (is_error(s) || !host_only(c.collective) || args->memory != COHORT_MEMORY_CUDA_DEVICE)
    return s;
  return failf(COHORT_ERR_NOT_SUPPORTED,
               "%s on GPU device memory: not supported (cohort_%s takes host memory: pageable, "
               "pinned or managed)",
               name, name);
}

}  // namespace cohort
