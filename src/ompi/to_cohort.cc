#include "to_cohort.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "mpi_map.h"

// The blocking call, or its _post form with the request last.
#define COHORT_START(fn, ...) \
  (request == nullptr ? fn(__VA_ARGS__) : fn##_post(__VA_ARGS__, request))

namespace cohort::ompi {
namespace {

char *at(void *ptr, size_t offset) { return static_cast<char *>(ptr) + offset; }

// A data-movement side's arguments: `count` elements, or with `counts` one block per rank at
// `displs`.
struct SideArgs {
  MPI_Datatype type;
  MPI_Aint count;
  const int *counts = nullptr;
  const int *displs = nullptr;
};

SideArgs side_args(const Call &c, Side side) {
  const coll_cohort_args_t &a = c.args;
  const MPI_Aint n = c.size;
  const bool send = side == Side::kSend;
  const SideArgs mine = send ? SideArgs{a.sdtype, a.scount} : SideArgs{a.rdtype, a.rcount};
  const SideArgs all = send ? SideArgs{a.sdtype, a.scount * n} : SideArgs{a.rdtype, a.rcount * n};
  const SideArgs v = send ? SideArgs{a.sdtype, 0, a.scounts, a.sdispls}
                          : SideArgs{a.rdtype, 0, a.rcounts, a.rdispls};
  switch (c.kind()) {
    case COLL_COHORT_BCAST: return {a.dtype, a.count};
    case COLL_COHORT_ALLGATHER:
    case COLL_COHORT_GATHER: return send ? mine : all;
    case COLL_COHORT_SCATTER: return send ? all : mine;
    case COLL_COHORT_ALLTOALL: return all;
    case COLL_COHORT_ALLGATHERV:
    case COLL_COHORT_GATHERV: return send ? mine : v;
    case COLL_COHORT_SCATTERV: return send ? v : mine;
    default: return v;  // alltoallv
  }
}

}  // namespace

std::optional<Fallback> CohortCall::prepare(const Call &call, const char **detail) {
  *detail = nullptr;
  if (call.kind() == COLL_COHORT_BARRIER) return std::nullopt;
  if (call.reduces()) return prepare_reduction(call);
  return prepare_blocks(call, detail);
}

// A reduction takes a predefined type (MPI allows no other with the predefined ops, the only
// ones Cohort has, and Open MPI refuses any other before the component sees the call), the same
// on every rank: its layout never differs between ranks, and nothing is packed.
std::optional<Fallback> CohortCall::prepare_reduction(const Call &call) {
  const coll_cohort_args_t &a = call.args;
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
  if (call.kind() == COLL_COHORT_REDUCE_SCATTER)
    recv_counts_.assign(a.rcounts, a.rcounts + call.size);
  send_.used = call.uses(Side::kSend);
  recv_.used = call.uses(Side::kRecv);
  return std::nullopt;
}

std::optional<Fallback> CohortCall::map_side(const Call &call, Side which, const char **detail) {
  CohortSide &s = side_(which);
  s.used = call.uses(which);
  if (!s.used) return std::nullopt;
  const SideArgs in = side_args(call, which);
  s.v = in.counts != nullptr;
  const int n = s.v ? call.size : 1;
  s.blocks.type = in.type;
  s.blocks.counts.assign(n, 0);
  s.blocks.displs.assign(n, 0);
  for (int q = 0; q < n; ++q) {
    const MPI_Aint count = s.v ? in.counts[q] : in.count;
    if (count < 0) return *detail = "a negative count", Fallback::kRefused;
    s.blocks.counts[q] = static_cast<size_t>(count);
    if (count > 0 && s.v) s.blocks.displs[q] = in.displs[q];
  }
  // A side that moves no element is not asked about its type (which may be any, even
  // MPI_DATATYPE_NULL, where its counts are 0).
  if (std::any_of(s.blocks.counts.begin(), s.blocks.counts.end(), [](size_t c) { return c > 0; })) {
    auto layout = type_layout(in.type);
    if (!layout) return *detail = "MPI cannot tell a datatype's layout", Fallback::kRefused;
    s.blocks.layout = *layout;
  }
  s.packed = s.blocks.total_bytes() > 0 && !s.blocks.layout.contiguous();
  s.written = which == Side::kRecv && !(call.kind() == COLL_COHORT_BCAST && call.is_root());
  s.bytes.resize(n);
  for (int q = 0; q < n; ++q) s.bytes[q] = s.blocks.block_bytes(q);
  if (s.packed) {
    s.displs = s.blocks.packed_offsets();
    return std::nullopt;
  }
  // Contiguous: each block's bytes from the lowest displacement, which may lie below the
  // buffer's address (MPI allows negative displacements; Cohort's are offsets from its pointer).
  MPI_Aint lowest = 0;
  for (int q = 0; q < n; ++q) {
    if (s.blocks.counts[q] > 0)
      lowest = std::min(lowest, s.blocks.displs[q] * s.blocks.layout.extent);
  }
  s.shift = lowest;
  s.displs.resize(n);
  for (int q = 0; q < n; ++q) {
    const MPI_Aint byte = s.blocks.displs[q] * s.blocks.layout.extent;
    s.displs[q] = s.blocks.counts[q] > 0 ? static_cast<size_t>(byte - lowest) : 0;
  }
  return std::nullopt;
}

std::optional<Fallback> CohortCall::prepare_blocks(const Call &call, const char **detail) {
  for (Side which : {Side::kSend, Side::kRecv}) {
    if (auto reason = map_side(call, which, detail)) return reason;
  }
  const coll_cohort_args_t &a = call.args;
  const Kind k = call.kind();
  const int me = call.rank;
  // Bytes of `count` elements of a side's type (0 where the side moves none).
  auto of = [](const CohortSide &s, MPI_Aint count) {
    return static_cast<size_t>(count) * s.blocks.layout.size;
  };
  auto own = [&](const CohortSide &s, MPI_Aint count) { return s.v ? s.bytes[me] : of(s, count); };
  if (k == COLL_COHORT_BCAST) {
    count_ = recv_.bytes[0];
    return std::nullopt;
  }
  const char *differ = "send and receive sizes differ";
  if (k == COLL_COHORT_ALLTOALLV) {
    count_ = 0;
  } else if (k == COLL_COHORT_ALLTOALL) {
    count_ = of(recv_, a.rcount);
    if (send_.used && of(send_, a.scount) != count_) return *detail = differ, Fallback::kRefused;
  } else if (k == COLL_COHORT_SCATTER || k == COLL_COHORT_SCATTERV) {
    const size_t root_block =
        send_.used ? (send_.v ? send_.bytes[a.root] : of(send_, a.scount)) : 0;
    count_ = call.is_root() ? root_block : of(recv_, a.rcount);
    if (call.is_root() && recv_.used && of(recv_, a.rcount) != root_block) {
      return *detail = differ, Fallback::kRefused;
    }
  } else {  // allgather(v), gather(v): the rank's own block
    count_ = send_.used ? of(send_, a.scount) : own(recv_, a.rcount);
    if (send_.used && recv_.used && count_ != own(recv_, a.rcount)) {
      return *detail = differ, Fallback::kRefused;
    }
  }
  return std::nullopt;
}

bool CohortCall::needs_host_memory(const Call &call) const {
  const bool scatters =
      call.kind() == COLL_COHORT_REDUCE_SCATTER_BLOCK || call.kind() == COLL_COHORT_REDUCE_SCATTER;
  return scatters && call.in_place();
}

size_t CohortCall::packed_bytes() const {
  size_t total = 0;
  for (const CohortSide *s : {&send_, &recv_}) total += s->packed ? s->blocks.total_bytes() : 0;
  return total;
}

cohort_status_t CohortCall::place(CohortSide &s, void *buffer, Target where, StagingPools &pools) {
  s.buffer = buffer;
  s.at = buffer;
  s.host = PooledBlock();  // a start refused on the GPU is followed by one on the host
  s.device = PooledBlock();
  if (!s.used || buffer == nullptr) return COHORT_SUCCESS;
  if (!s.packed) {
    s.at = static_cast<char *>(buffer) + s.shift;
    return COHORT_SUCCESS;
  }
  const size_t bytes = s.blocks.total_bytes();
  s.host = PooledBlock(pools.host, bytes);
  if (s.host.data() == nullptr) return COHORT_ERR_NO_MEMORY;
  if (!pack_blocks(s.blocks, buffer, s.host.data())) return COHORT_ERR_INTERNAL;
  s.at = s.host.data();
  if (where == Target::kHost) return COHORT_SUCCESS;
  s.device = PooledBlock(pools.device, bytes);
  if (s.device.data() == nullptr) return COHORT_ERR_NO_MEMORY;
  s.at = s.device.data();
  return cohort_memcpy(s.at, s.host.data(), bytes);
}

cohort_status_t CohortCall::start(cohort_team_t team, const Call &call,
                                  const coll_cohort_args_t &args, Target where, StagingPools &pools,
                                  cohort_request_t *request) {
  if (call.kind() == COLL_COHORT_BARRIER) {
    return request == nullptr ? cohort_barrier(team) : cohort_barrier_post(team, request);
  }
  cohort_status_t s = place(send_, const_cast<void *>(args.sbuf), where, pools);
  if (s == COHORT_SUCCESS) s = place(recv_, args.rbuf, where, pools);
  if (s != COHORT_SUCCESS) return s;
  if (call.kind() == COLL_COHORT_BCAST) {
    return COHORT_START(cohort_broadcast, team, recv_.at, recv_.at, count_, COHORT_UINT8,
                        args.root);
  }
  if (call.reduces()) return start_reduction(team, call, request);
  return start_blocks(team, call, request);
}

cohort_status_t CohortCall::start_reduction(cohort_team_t team, const Call &call,
                                            cohort_request_t *request) {
  const void *send = call.in_place() ? recv_.at : send_.at;
  const int root = call.args.root;
  switch (call.kind()) {
    case COLL_COHORT_ALLREDUCE:
      return COHORT_START(cohort_allreduce, team, send, recv_.at, count_, dtype_, op_);
    case COLL_COHORT_REDUCE:
      return COHORT_START(cohort_reduce, team, send, call.is_root() ? recv_.at : nullptr, count_,
                          dtype_, op_, root);
    case COLL_COHORT_SCAN:
      return COHORT_START(cohort_scan, team, send, recv_.at, count_, dtype_, op_);
    case COLL_COHORT_EXSCAN:
      return COHORT_START(cohort_exscan, team, send, recv_.at, count_, dtype_, op_);
    default: return start_reduce_scatter(team, call, request);
  }
}

// MPI puts the result at the front of an in-place buffer and leaves the rest as it was;
// Cohort's in-place form (NCCL's) puts it at the rank's block.  Those agree when nothing
// precedes the rank's block; otherwise Cohort reduces out of place into a block of its own,
// which finish() copies to the front (the input is only read, so the rank's block stays).
cohort_status_t CohortCall::start_reduce_scatter(cohort_team_t team, const Call &call,
                                                 cohort_request_t *request) {
  const bool v = call.kind() == COLL_COHORT_REDUCE_SCATTER;
  size_t before = v ? 0 : call.rank * count_;
  for (int r = 0; v && r < call.rank; ++r) before += recv_counts_[r];
  const size_t mine = v ? recv_counts_[call.rank] : count_;
  const void *send = call.in_place() ? recv_.at : send_.at;
  void *recv = recv_.at;
  if (call.in_place()) {
    recv = at(recv_.at, before * elem_);  // Cohort's in-place convention
    if (before > 0 && mine > 0) {
      result_.reset(new (std::nothrow) char[mine * elem_]);
      if (result_ == nullptr) return COHORT_ERR_NO_MEMORY;
      result_bytes_ = mine * elem_;
      result_to_ = recv_.at;
      recv = result_.get();
    }
  }
  if (v) {
    return COHORT_START(cohort_reduce_scatterv, team, send, recv, recv_counts_.data(), dtype_, op_);
  }
  return COHORT_START(cohort_reduce_scatter, team, send, recv, count_, dtype_, op_);
}

cohort_status_t CohortCall::start_blocks(cohort_team_t team, const Call &call,
                                         cohort_request_t *request) {
  const bool ip = call.in_place();
  const int me = call.rank, root = call.args.root;
  const size_t *rc = recv_.bytes.data(), *rd = recv_.displs.data();
  const size_t *sc = send_.bytes.data(), *sd = send_.displs.data();
  void *recv = recv_.at, *send = send_.at;
  switch (call.kind()) {
    case COLL_COHORT_ALLGATHER:
      return COHORT_START(cohort_allgather, team, ip ? at(recv, me * count_) : send, recv, count_,
                          COHORT_UINT8);
    case COLL_COHORT_ALLGATHERV:
      return COHORT_START(cohort_allgatherv, team, ip ? at(recv, rd[me]) : send, recv, rc, rd,
                          COHORT_UINT8);
    case COLL_COHORT_ALLTOALL:
      return COHORT_START(cohort_alltoall, team, ip ? recv : send, recv, count_, COHORT_UINT8);
    case COLL_COHORT_ALLTOALLV:
      return COHORT_START(cohort_alltoallv, team, ip ? recv : send, ip ? nullptr : sc,
                          ip ? nullptr : sd, recv, rc, rd, COHORT_UINT8);
    case COLL_COHORT_GATHER:
      return COHORT_START(cohort_gather, team, ip ? at(recv, root * count_) : send,
                          call.is_root() ? recv : nullptr, count_, COHORT_UINT8, root);
    case COLL_COHORT_GATHERV:
      return COHORT_START(cohort_gatherv, team, ip ? at(recv, rd[root]) : send, count_,
                          call.is_root() ? recv : nullptr, call.is_root() ? rc : nullptr,
                          call.is_root() ? rd : nullptr, COHORT_UINT8, root);
    case COLL_COHORT_SCATTER:
      return COHORT_START(cohort_scatter, team, call.is_root() ? send : nullptr,
                          ip ? at(send, root * count_) : recv, count_, COHORT_UINT8, root);
    case COLL_COHORT_SCATTERV:
      return COHORT_START(cohort_scatterv, team, call.is_root() ? send : nullptr,
                          call.is_root() ? sc : nullptr, call.is_root() ? sd : nullptr,
                          ip ? at(send, sd[root]) : recv, count_, COHORT_UINT8, root);
    default: return COHORT_ERR_INTERNAL;
  }
}

cohort_status_t CohortCall::finish() {
  if (result_ != nullptr) std::memcpy(result_to_, result_.get(), result_bytes_);
  result_.reset();
  for (CohortSide *s : {&send_, &recv_}) {
    if (!s->packed || !s->written || s->host.data() == nullptr) continue;
    const size_t bytes = s->blocks.total_bytes();
    if (s->device.data() != nullptr) {
      if (cohort_status_t st = cohort_memcpy(s->host.data(), s->device.data(), bytes);
          st != COHORT_SUCCESS) {
        return st;
      }
    }
    if (!unpack_blocks(s->blocks, s->host.data(), s->buffer)) return COHORT_ERR_INTERNAL;
  }
  return COHORT_SUCCESS;
}

}  // namespace cohort::ompi
