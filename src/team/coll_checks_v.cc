// The v-variants' checks, after the common ones (coll_checks.cc): the arrays a rank needs are
// there, every block fits a buffer, a rank's block to itself has one size on both sides, and
// a buffer is NULL only where no element of it is used.  The arrays are copied into the
// call's layouts: a posted call outlives them.
//
// Counts that disagree between ranks (rank 1 sends 5 elements, the root expects 7) cannot be
// seen here, and the channels carry bytes without sizes: as in MPI they are the caller's
// duty (cohort.h).
#include <numeric>

#include "coll/dtype.h"
#include "team/coll_front.h"

namespace cohort {
namespace {

using coll::BlockLayout;
using coll::Collective;

// One side's arrays as the caller named them; `displs` null: blocks back to back
// (reduce_scatterv's input).
struct Side {
  const char *counts_name;
  const size_t *counts;
  const char *displs_name;
  const size_t *displs;
};

size_t total(const BlockLayout &layout) {
  return std::accumulate(layout.counts.begin(), layout.counts.end(), size_t{0});
}

Status past_any_buffer(const char *call, const Side &side, int q, size_t displ, size_t count,
                       size_t elem) {
  if (side.displs == nullptr) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "%s: %s[0..%d] add up to more elements of %zu bytes than any buffer holds", call,
                 side.counts_name, q, elem);
  }
  return failf(COHORT_ERR_INVALID_ARG,
               "%s: block %d ends past any buffer: %s[%d]=%zu + %s[%d]=%zu elements of %zu bytes",
               call, q, side.displs_name, q, displ, side.counts_name, q, count, elem);
}

// The layout a side's arrays give, refused when an array is NULL or a block's end, in bytes,
// wraps or exceeds any buffer.
Status read_layout(const char *call, const Side &side, const coll::CollArgs &args,
                   BlockLayout *out) {
  if (side.counts == nullptr || (side.displs_name != nullptr && side.displs == nullptr)) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: %s is NULL", call,
                 side.counts == nullptr ? side.counts_name : side.displs_name);
  }
  out->counts.assign(side.counts, side.counts + args.size);
  out->displs.resize(args.size);
  size_t next = 0;  // back to back: the end of the block before
  for (int q = 0; q < args.size; ++q) {
    const size_t displ = side.displs != nullptr ? side.displs[q] : next;
    size_t end = 0, bytes = 0;
    if (__builtin_add_overflow(displ, out->counts[q], &end) ||
        __builtin_mul_overflow(end, args.elem_size, &bytes) || bytes >= kMaxBufferBytes) {
      return past_any_buffer(call, side, q, displ, out->counts[q], args.elem_size);
    }
    out->displs[q] = displ;
    next = end;
  }
  return COHORT_SUCCESS;
}

// A rank's block to itself is copied, not sent: its two sizes must agree.
Status check_own_block(const char *call, const char *send_name, size_t send_count,
                       const char *recv_name, size_t recv_count, int rank) {
  if (send_count == recv_count) return COHORT_SUCCESS;
  return failf(COHORT_ERR_INVALID_ARG,
               "%s: rank %d's block to itself has two sizes: %s=%zu but %s[%d]=%zu elements", call,
               rank, send_name, send_count, recv_name, rank, recv_count);
}

// sendbuf and recvbuf may be NULL only where this rank uses none of their elements.
Status check_buffers(const char *call, const CollCall &c, size_t send_n, size_t recv_n) {
  if (c.src == nullptr && send_n > 0) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: sendbuf is NULL with %zu elements to send", call,
                 send_n);
  }
  if (c.dst == nullptr && recv_n > 0) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: recvbuf is NULL with %zu elements to receive", call,
                 recv_n);
  }
  return COHORT_SUCCESS;
}

// Whether `inner` is element `displ` of `outer`.
bool at_block(const void *inner, const void *outer, size_t displ, size_t elem) {
  return inner != nullptr && outer != nullptr &&
         static_cast<const char *>(inner) == static_cast<const char *>(outer) + displ * elem;
}

Status check_allgatherv(const char *call, const CollCall &c, coll::CollArgs *args,
                        coll::BlockLayouts *l) {
  const VArrays &a = c.arrays;
  Status s =
      read_layout(call, {"recvcounts", a.recv_counts, "displs", a.recv_displs}, *args, &l->recv);
  if (is_error(s)) return s;
  args->count = l->recv.counts[args->rank];
  args->in_place = at_block(c.src, c.dst, l->recv.displs[args->rank], args->elem_size);
  return check_buffers(call, c, args->in_place ? 0 : args->count, total(l->recv));
}

Status check_alltoallv(const char *call, const CollCall &c, coll::CollArgs *args,
                       coll::BlockLayouts *l) {
  const VArrays &a = c.arrays;
  Status s =
      read_layout(call, {"recvcounts", a.recv_counts, "rdispls", a.recv_displs}, *args, &l->recv);
  if (is_error(s)) return s;
  args->count = l->recv.counts[args->rank];
  // In place (MPI_IN_PLACE's alltoallv) the receive layout serves both sides.
  args->in_place = c.src != nullptr && c.src == c.dst;
  if (args->in_place) {
    l->send = l->recv;
    return COHORT_SUCCESS;
  }
  s = read_layout(call, {"sendcounts", a.send_counts, "sdispls", a.send_displs}, *args, &l->send);
  if (!is_error(s)) {
    s = check_own_block(call, "sendcounts[rank]", l->send.counts[args->rank], "recvcounts",
                        args->count, args->rank);
  }
  return is_error(s) ? s : check_buffers(call, c, total(l->send), total(l->recv));
}

// gatherv (`gather`) or scatterv: the root's blocked side, in place when the rank's own
// buffer is the root's block.
Status check_rooted_v(const char *call, const CollCall &c, bool gather, coll::CollArgs *args,
                      coll::BlockLayouts *l) {
  const VArrays &a = c.arrays;
  args->count = c.count;
  if (args->rank != args->root) {
    return gather ? check_buffers(call, c, c.count, 0) : check_buffers(call, c, 0, c.count);
  }
  const Side side = gather ? Side{"recvcounts", a.recv_counts, "displs", a.recv_displs}
                           : Side{"sendcounts", a.send_counts, "displs", a.send_displs};
  BlockLayout &blocked = gather ? l->recv : l->send;
  Status s = read_layout(call, side, *args, &blocked);
  if (is_error(s)) return s;
  const size_t own = blocked.counts[args->root], displ = blocked.displs[args->root];
  args->in_place = gather ? at_block(c.src, c.dst, displ, args->elem_size)
                          : at_block(c.dst, c.src, displ, args->elem_size);
  if (args->in_place) {
    args->count = own;  // as MPI_IN_PLACE, the root's scalar count is not used
  } else {
    s = check_own_block(call, gather ? "sendcount" : "recvcount", c.count, side.counts_name, own,
                        args->root);
    if (is_error(s)) return s;
  }
  const size_t own_n = args->in_place ? 0 : c.count;
  return gather ? check_buffers(call, c, own_n, total(blocked))
                : check_buffers(call, c, total(blocked), own_n);
}

Status check_reduce_scatterv(const char *call, const CollCall &c, coll::CollArgs *args,
                             coll::BlockLayouts *l) {
  Status s =
      read_layout(call, {"recvcounts", c.arrays.recv_counts, nullptr, nullptr}, *args, &l->send);
  if (is_error(s)) return s;
  args->count = l->send.counts[args->rank];
  args->in_place = at_block(c.dst, c.src, l->send.displs[args->rank], args->elem_size);
  return check_buffers(call, c, total(l->send), args->count);
}

}  // namespace

Status check_vcall(const CollCall &c, coll::CollArgs *args) {
  const char *call = coll::collective_name(c.collective);
  auto layouts = std::make_shared<coll::BlockLayouts>();
  Status s = COHORT_ERR_INTERNAL;
  switch (c.collective) {
    case Collective::kAllgatherv: s = check_allgatherv(call, c, args, layouts.get()); break;
    case Collective::kAlltoallv: s = check_alltoallv(call, c, args, layouts.get()); break;
    case Collective::kGatherv: s = check_rooted_v(call, c, true, args, layouts.get()); break;
    case Collective::kScatterv: s = check_rooted_v(call, c, false, args, layouts.get()); break;
    case Collective::kReduceScatterv:
      s = check_reduce_scatterv(call, c, args, layouts.get());
      break;
    default: return failf(COHORT_ERR_INTERNAL, "%s is not a v-variant", call);
  }
  if (is_error(s)) return s;
  args->layouts = std::move(layouts);
  return COHORT_SUCCESS;
}

}  // namespace cohort
