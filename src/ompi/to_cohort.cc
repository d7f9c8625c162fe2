#include "to_cohort.h"

#include <cstring>
#include <new>

#include "mpi_map.h"

// The blocking call, or its _post form with the request last.
#define COHORT_START(fn, ...) \
  (request == nullptr ? fn(__VA_ARGS__) : fn##_post(__VA_ARGS__, request))

namespace cohort::ompi {
namespace {

char *at(void *ptr, size_t offset) { return static_cast<char *>(ptr) + offset; }

// Counts and displacements of MPI elements as Cohort's (bytes of `elem`-byte elements);
// false for a negative one, which Cohort's size_t arrays cannot hold.
bool to_bytes(const int *counts, const int *displs, int n, size_t elem, std::vector<size_t> *c,
              std::vector<size_t> *d) {
  c->resize(n);
  d->resize(n);
  for (int i = 0; i < n; ++i) {
    if (counts[i] < 0 || displs[i] < 0) return false;
    (*c)[i] = static_cast<size_t>(counts[i]) * elem;
    (*d)[i] = static_cast<size_t>(displs[i]) * elem;
  }
  return true;
}

}  // namespace

std::optional<Fallback> CohortCall::prepare(const Call &call, const char **detail) {
  const coll_cohort_args_t &a = call.args;
  *detail = nullptr;
  if (call.kind() == COLL_COHORT_BARRIER) return std::nullopt;
  if (call.kind() == COLL_COHORT_BCAST) {
    auto bytes = contiguous_bytes(a.dtype, a.count);
    if (!bytes) return Fallback::kNotContiguous;
    count_ = *bytes;
    return std::nullopt;
  }
  if (!call.reduces()) return prepare_blocks(call, detail);
  auto d = reduction_dtype(a.dtype);
  if (!d) return Fallback::kDatatype;
  auto o = reduction_op(a.op);
  if (!o) return Fallback::kOp;
  dtype_ = *d;
  op_ = *o;
  int size = 0;
  MPI_Type_size(a.dtype, &size);
  elem_ = static_cast<size_t>(size);
  count_ = static_cast<size_t>(a.count);
  if (call.kind() == COLL_COHORT_REDUCE_SCATTER) {
    recv_counts_.assign(a.rcounts, a.rcounts + call.size);
  }
  return std::nullopt;
}

std::optional<Fallback> CohortCall::prepare_blocks(const Call &call, const char **detail) {
  const coll_cohort_args_t &a = call.args;
  const Kind k = call.kind();
  const bool in_place = call.in_place();
  // Which sides this rank uses: the root alone has gather's receive and scatter's send side;
  // in place, the send side is in the receive buffer (scatter's root: the other way round).
  const bool gathers = k == COLL_COHORT_GATHER || k == COLL_COHORT_GATHERV;
  const bool scatters = k == COLL_COHORT_SCATTER || k == COLL_COHORT_SCATTERV;
  const bool root_side = call.is_root();
  const bool uses_send = scatters ? root_side : !in_place;
  const bool uses_recv = gathers ? root_side : !(scatters && in_place);
  const bool send_is_v = k == COLL_COHORT_ALLTOALLV || k == COLL_COHORT_SCATTERV;
  const bool recv_is_v =
      k == COLL_COHORT_ALLTOALLV || k == COLL_COHORT_ALLGATHERV || k == COLL_COHORT_GATHERV;
  auto send_elem = contiguous_bytes(a.sdtype, 1);
  auto recv_elem = contiguous_bytes(a.rdtype, 1);
  if ((uses_send && !send_elem) || (uses_recv && !recv_elem)) return Fallback::kNotContiguous;
  send_elem_ = send_elem.value_or(1);
  recv_elem_ = recv_elem.value_or(1);
  const int n = call.size;
  if (uses_send && send_is_v &&
      !to_bytes(a.scounts, a.sdispls, n, send_elem_, &send_counts_, &send_displs_)) {
    *detail = "a negative count or displacement";
    return Fallback::kRefused;
  }
  if (uses_recv && recv_is_v &&
      !to_bytes(a.rcounts, a.rdispls, n, recv_elem_, &recv_counts_, &recv_displs_)) {
    *detail = "a negative count or displacement";
    return Fallback::kRefused;
  }
  // This rank's block: what it sends, what it receives of its own (they must agree).
  const size_t sent = send_is_v ? (send_counts_.empty() ? 0 : send_counts_[call.rank])
                                : static_cast<size_t>(a.scount) * send_elem_;
  const size_t got = recv_is_v ? (recv_counts_.empty() ? 0 : recv_counts_[call.rank])
                               : static_cast<size_t>(a.rcount) * recv_elem_;
  if (k == COLL_COHORT_ALLTOALL) {
    count_ = got;
    if (uses_send && sent != got)
      return *detail = "send and receive sizes differ", Fallback::kRefused;
  } else if (k == COLL_COHORT_ALLTOALLV) {
    count_ = 0;
  } else if (k == COLL_COHORT_SCATTER || k == COLL_COHORT_SCATTERV) {
    const size_t root_block = send_is_v ? (send_counts_.empty() ? 0 : send_counts_[call.args.root])
                                        : static_cast<size_t>(a.scount) * send_elem_;
    count_ = root_side ? root_block : got;
    if (root_side && !in_place && got != root_block) {
      return *detail = "send and receive sizes differ", Fallback::kRefused;
    }
  } else {  // allgather(v), gather(v): the rank's own block
    const size_t own = recv_is_v ? (recv_counts_.empty() ? 0 : recv_counts_[call.rank])
                                 : static_cast<size_t>(a.rcount) * recv_elem_;
    count_ = uses_send ? sent : own;
    if (uses_send && uses_recv && sent != own) {
      return *detail = "send and receive sizes differ", Fallback::kRefused;
    }
  }
  return std::nullopt;
}

bool CohortCall::needs_host_memory(const Call &call) const {
  const bool scatters =
      call.kind() == COLL_COHORT_REDUCE_SCATTER_BLOCK || call.kind() == COLL_COHORT_REDUCE_SCATTER;
  return scatters && call.in_place();
}

cohort_status_t CohortCall::start(cohort_team_t team, const Call &call,
                                  const coll_cohort_args_t &args, cohort_request_t *request) {
  if (call.kind() == COLL_COHORT_BARRIER) {
    return request == nullptr ? cohort_barrier(team) : cohort_barrier_post(team, request);
  }
  if (call.kind() == COLL_COHORT_BCAST) {
    return COHORT_START(cohort_broadcast, team, args.rbuf, args.rbuf, count_, COHORT_UINT8,
                        args.root);
  }
  if (call.reduces()) return start_reduction(team, call, args, request);
  return start_blocks(team, call, args, request);
}

cohort_status_t CohortCall::start_reduction(cohort_team_t team, const Call &call,
                                            const coll_cohort_args_t &args,
                                            cohort_request_t *request) {
  const void *send = call.in_place() ? args.rbuf : args.sbuf;
  switch (call.kind()) {
    case COLL_COHORT_ALLREDUCE:
      return COHORT_START(cohort_allreduce, team, send, args.rbuf, count_, dtype_, op_);
    case COLL_COHORT_REDUCE:
      return COHORT_START(cohort_reduce, team, send, call.is_root() ? args.rbuf : nullptr, count_,
                          dtype_, op_, args.root);
    case COLL_COHORT_SCAN:
      return COHORT_START(cohort_scan, team, send, args.rbuf, count_, dtype_, op_);
    case COLL_COHORT_EXSCAN:
      return COHORT_START(cohort_exscan, team, send, args.rbuf, count_, dtype_, op_);
    default: return start_reduce_scatter(team, call, args, request);
  }
}

// MPI puts the result at the front of an in-place buffer and leaves the rest as it was;
// Cohort's in-place form (NCCL's) puts it at the rank's block.  Those agree when nothing
// precedes the rank's block; otherwise Cohort reduces out of place into a block of its own,
// which finish() copies to the front (the input is only read, so the rank's block stays).
cohort_status_t CohortCall::start_reduce_scatter(cohort_team_t team, const Call &call,
                                                 const coll_cohort_args_t &args,
                                                 cohort_request_t *request) {
  const bool v = call.kind() == COLL_COHORT_REDUCE_SCATTER;
  size_t before = v ? 0 : call.rank * count_;
  for (int r = 0; v && r < call.rank; ++r) before += recv_counts_[r];
  const size_t mine = v ? recv_counts_[call.rank] : count_;
  const void *send = call.in_place() ? args.rbuf : args.sbuf;
  void *recv = args.rbuf;
  if (call.in_place()) {
    recv = at(args.rbuf, before * elem_);  // Cohort's in-place convention
    if (before > 0 && mine > 0) {
      result_bytes_ = mine * elem_;
      result_.reset(new (std::nothrow) char[result_bytes_]);
      if (result_ == nullptr) return COHORT_ERR_NO_MEMORY;
      result_to_ = args.rbuf;
      recv = result_.get();
    }
  }
  if (v) {
    return COHORT_START(cohort_reduce_scatterv, team, send, recv, recv_counts_.data(), dtype_, op_);
  }
  return COHORT_START(cohort_reduce_scatter, team, send, recv, count_, dtype_, op_);
}

cohort_status_t CohortCall::start_blocks(cohort_team_t team, const Call &call,
                                         const coll_cohort_args_t &args,
                                         cohort_request_t *request) {
  const bool ip = call.in_place();
  const int me = call.rank, root = args.root;
  const size_t *rc = recv_counts_.data(), *rd = recv_displs_.data();
  const size_t *sc = send_counts_.data(), *sd = send_displs_.data();
  switch (call.kind()) {
    case COLL_COHORT_ALLGATHER:
      return COHORT_START(cohort_allgather, team, ip ? at(args.rbuf, me * count_) : args.sbuf,
                          args.rbuf, count_, COHORT_UINT8);
    case COLL_COHORT_ALLGATHERV:
      return COHORT_START(cohort_allgatherv, team, ip ? at(args.rbuf, rd[me]) : args.sbuf,
                          args.rbuf, rc, rd, COHORT_UINT8);
    case COLL_COHORT_ALLTOALL:
      return COHORT_START(cohort_alltoall, team, ip ? args.rbuf : args.sbuf, args.rbuf, count_,
                          COHORT_UINT8);
    case COLL_COHORT_ALLTOALLV:
      return COHORT_START(cohort_alltoallv, team, ip ? args.rbuf : args.sbuf, ip ? nullptr : sc,
                          ip ? nullptr : sd, args.rbuf, rc, rd, COHORT_UINT8);
    case COLL_COHORT_GATHER:
      return COHORT_START(cohort_gather, team, ip ? at(args.rbuf, root * count_) : args.sbuf,
                          call.is_root() ? args.rbuf : nullptr, count_, COHORT_UINT8, root);
    case COLL_COHORT_GATHERV:
      return COHORT_START(cohort_gatherv, team, ip ? at(args.rbuf, rd[root]) : args.sbuf, count_,
                          call.is_root() ? args.rbuf : nullptr, rc, rd, COHORT_UINT8, root);
    case COLL_COHORT_SCATTER:
      return COHORT_START(cohort_scatter, team, call.is_root() ? args.sbuf : nullptr,
                          ip ? at(const_cast<void *>(args.sbuf), root * count_) : args.rbuf, count_,
                          COHORT_UINT8, root);
    case COLL_COHORT_SCATTERV:
      return COHORT_START(cohort_scatterv, team, call.is_root() ? args.sbuf : nullptr, sc, sd,
                          ip ? at(const_cast<void *>(args.sbuf), sd[root]) : args.rbuf, count_,
                          COHORT_UINT8, root);
    default: return COHORT_ERR_INTERNAL;
  }
}

void CohortCall::finish() {
  if (result_ != nullptr) std::memcpy(result_to_, result_.get(), result_bytes_);
  result_.reset();
}

}  // namespace cohort::ompi
