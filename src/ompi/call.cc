#include "call.h"

#include <algorithm>
#include <optional>

namespace cohort::ompi {
namespace {

bool rooted_send_side(Kind k) {  // MPI_IN_PLACE is the root's send buffer
  return k == COLL_COHORT_REDUCE || k == COLL_COHORT_GATHER || k == COLL_COHORT_GATHERV;
}

bool rooted_recv_side(Kind k) {  // MPI_IN_PLACE is the root's receive buffer
  return k == COLL_COHORT_SCATTER || k == COLL_COHORT_SCATTERV;
}

// An element type's layout in memory, from MPI.
struct Layout {
  MPI_Aint extent = 0;       // from one element to the next
  MPI_Aint true_lb = 0;      // the first byte of data relative to the element's address
  MPI_Aint true_extent = 0;  // bytes from the first byte of data to the last
};

std::optional<Layout> layout_of(MPI_Datatype datatype) {
  Layout l;
  MPI_Aint lb = 0;
  if (MPI_Type_get_extent(datatype, &lb, &l.extent) != MPI_SUCCESS ||
      MPI_Type_get_true_extent(datatype, &l.true_lb, &l.true_extent) != MPI_SUCCESS) {
    return std::nullopt;
  }
  return l;
}

// Bytes of `count` elements from element `first` on; empty for none.
struct Span {
  MPI_Aint begin = 0, end = 0;
};
Span span_of(const Layout &l, MPI_Aint first, MPI_Aint count) {
  if (count <= 0) return {};
  const MPI_Aint begin = first * l.extent + l.true_lb;
  return {begin, begin + (count - 1) * l.extent + l.true_extent};
}

Region region_from(const void *ptr, Span s) {
  if (s.end <= s.begin) return {};
  return {static_cast<const char *>(ptr) + s.begin, static_cast<size_t>(s.end - s.begin)};
}

// `count` elements at ptr (none: the datatype is not asked about).
std::optional<Region> region(const void *ptr, MPI_Datatype datatype, MPI_Aint count) {
  if (count <= 0) return Region{};
  auto l = layout_of(datatype);
  if (!l) return std::nullopt;
  return region_from(ptr, span_of(*l, 0, count));
}

// Blocks of counts[i] elements at displs[i], i < n: from the first byte of any to the last.
std::optional<Region> v_region(const void *ptr, MPI_Datatype datatype, const int *counts,
                               const int *displs, int n) {
  if (std::none_of(counts, counts + n, [](int c) { return c > 0; })) return Region{};
  auto l = layout_of(datatype);
  if (!l) return std::nullopt;
  Span all{0, 0};
  bool any = false;
  for (int i = 0; i < n; ++i) {
    const Span s = span_of(*l, displs[i], counts[i]);
    if (s.end <= s.begin) continue;
    all = any ? Span{std::min(all.begin, s.begin), std::max(all.end, s.end)} : s;
    any = true;
  }
  return region_from(ptr, any ? all : Span{});
}

MPI_Aint sum(const int *counts, int n) {
  MPI_Aint total = 0;
  for (int i = 0; i < n; ++i) total += counts[i];
  return total;
}

}  // namespace

bool Call::in_place() const {
  if (rooted_send_side(kind())) return is_root() && args.sbuf == MPI_IN_PLACE;
  if (rooted_recv_side(kind())) return is_root() && args.rbuf == MPI_IN_PLACE;
  return args.sbuf == MPI_IN_PLACE;
}

bool Call::uses(Side side) const {
  const Kind k = kind();
  if (k == COLL_COHORT_BARRIER) return false;
  if (k == COLL_COHORT_BCAST) return side == Side::kRecv;
  const bool gathers = k == COLL_COHORT_REDUCE || k == COLL_COHORT_GATHER ||
                       k == COLL_COHORT_GATHERV;  // the root alone receives
  const bool scatters = k == COLL_COHORT_SCATTER || k == COLL_COHORT_SCATTERV;
  if (side == Side::kSend) return scatters ? is_root() : !in_place();
  if (gathers) return is_root();
  return !(scatters && in_place());
}

bool Call::reduces() const {
  switch (kind()) {
    case COLL_COHORT_ALLREDUCE:
    case COLL_COHORT_REDUCE:
    case COLL_COHORT_REDUCE_SCATTER_BLOCK:
    case COLL_COHORT_REDUCE_SCATTER:
    case COLL_COHORT_SCAN:
    case COLL_COHORT_EXSCAN: return true;
    default: return false;
  }
}

namespace {

// The send and receive regions of each collective (nullopt: no such buffer on this rank).
struct Regions {
  std::optional<Region> send, recv;
  bool ok = true;
};

void put(std::optional<Region> *slot, std::optional<Region> r, bool *ok) {
  if (!r) *ok = false;
  *slot = r;
}

Regions reduction_regions(const Call &c) {
  const coll_cohort_args_t &a = c.args;
  Regions r;
  const bool in_place = c.in_place();
  MPI_Aint in = a.count, out = a.count;
  if (c.kind() == COLL_COHORT_REDUCE_SCATTER_BLOCK) in = MPI_Aint{a.count} * c.size;
  if (c.kind() == COLL_COHORT_REDUCE_SCATTER) in = sum(a.rcounts, c.size);
  if (c.kind() == COLL_COHORT_REDUCE_SCATTER) out = a.rcounts[c.rank];
  if (in_place) out = in;  // the whole input is the receive buffer
  if (c.uses(Side::kSend)) put(&r.send, region(a.sbuf, a.dtype, in), &r.ok);
  if (c.uses(Side::kRecv)) put(&r.recv, region(a.rbuf, a.dtype, out), &r.ok);
  return r;
}

// The send side's region (send = true) or the receive side's of a data-movement collective,
// for a rank that uses that side.
std::optional<Region> block_region(const Call &c, bool send) {
  const coll_cohort_args_t &a = c.args;
  const MPI_Aint n = c.size;
  const void *buf = send ? a.sbuf : a.rbuf;
  const MPI_Datatype type = send ? a.sdtype : a.rdtype;
  const int count = send ? a.scount : a.rcount;
  const int *counts = send ? a.scounts : a.rcounts;
  const int *displs = send ? a.sdispls : a.rdispls;
  switch (c.kind()) {
    case COLL_COHORT_ALLGATHER:
    case COLL_COHORT_GATHER: return region(buf, type, send ? MPI_Aint{count} : count * n);
    case COLL_COHORT_SCATTER: return region(buf, type, send ? count * n : MPI_Aint{count});
    case COLL_COHORT_ALLTOALL: return region(buf, type, count * n);
    case COLL_COHORT_ALLGATHERV:
    case COLL_COHORT_GATHERV:
      return send ? region(buf, type, count) : v_region(buf, type, counts, displs, c.size);
    case COLL_COHORT_SCATTERV:
      return send ? v_region(buf, type, counts, displs, c.size) : region(buf, type, count);
    case COLL_COHORT_ALLTOALLV: return v_region(buf, type, counts, displs, c.size);
    default: return Region{};
  }
}

Regions block_regions(const Call &c) {
  Regions r;
  if (c.uses(Side::kSend)) put(&r.send, block_region(c, true), &r.ok);
  if (c.uses(Side::kRecv)) put(&r.recv, block_region(c, false), &r.ok);
  return r;
}

}  // namespace

bool Call::buffers(CallBuffers *out) const {
  out->count = 0;
  Regions r;
  if (kind() == COLL_COHORT_BCAST) {
    put(&r.recv, region(args.rbuf, args.dtype, args.count), &r.ok);
  } else if (reduces()) {
    r = reduction_regions(*this);
  } else if (kind() != COLL_COHORT_BARRIER) {
    r = block_regions(*this);
  }
  if (!r.ok) return false;
  // The root reads its broadcast buffer; every other rank writes it.  In place, the receive
  // side is read as well as written (staging copies a written buffer in too).
  const bool recv_written = kind() != COLL_COHORT_BCAST || !is_root();
  if (r.send && r.send->bytes > 0) out->use[out->count++] = {Side::kSend, *r.send, false};
  if (r.recv && r.recv->bytes > 0) out->use[out->count++] = {Side::kRecv, *r.recv, recv_written};
  return true;
}

}  // namespace cohort::ompi
