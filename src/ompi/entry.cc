// The C entry points the glue calls: each checks the call against the rules (memory, type, op,
// layout), gets the communicator's team and runs the collective on Cohort, or says "fall back".
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <string>

#include "coll_cohort.h"
#include "comm_state.h"
#include "component.h"
#include "mpi_map.h"

struct coll_cohort_comm : cohort::ompi::CommState {
  using CommState::CommState;
};

namespace cohort::ompi {
namespace {

struct CollName {
  const char *name;
  int bit;
};
constexpr CollName kCollNames[] = {
    {"allreduce", COLL_COHORT_ALLREDUCE},
    {"bcast", COLL_COHORT_BCAST},
    {"reduce", COLL_COHORT_REDUCE},
    {"allgather", COLL_COHORT_ALLGATHER},
    {"reduce_scatter_block", COLL_COHORT_REDUCE_SCATTER_BLOCK},
    {"alltoall", COLL_COHORT_ALLTOALL},
    {"barrier", COLL_COHORT_BARRIER},
};

int parse_collectives(const char *list) {
  int mask = 0;
  if (list == nullptr || std::strcmp(list, "all") == 0) {
    for (const CollName &c : kCollNames) mask |= c.bit;
    return mask;
  }
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    bool known = false;
    for (const CollName &c : kCollNames) {
      if (item == c.name) mask |= c.bit, known = true;
    }
    if (!known) {
      say(kWarning,
          "coll_cohort_collectives names '%s', which is not one of allreduce, bcast, reduce, "
          "allgather, reduce_scatter_block, alltoall, barrier: ignored",
          item.c_str());
    }
  }
  return mask;
}

// The common front of every entry: reentry, an earlier failure, the memory rule, the team.
// Returns the team, or nullptr after counting the fallback.
cohort_team_t admit(CommState *state, Coll coll, const CallBuffers &buffers) {
  if (busy()) return state->fall_back(coll, Fallback::kReentered), nullptr;
  if (state->failed_before()) return state->fall_back(coll, Fallback::kAfterFailure), nullptr;
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  if (auto reason = memory_rule(buffers, params().host_buffers, cohort_memory_kind, &kind)) {
    return state->fall_back(coll, *reason), nullptr;
  }
  cohort_team_t team = state->team(coll);
  if (team == nullptr) state->fall_back(coll, Fallback::kNoTeam);
  return team;
}

// Ranks of the team are those of the communicator (it is made from a duplicate of it).
int comm_rank(const CommState *state) {
  int rank = 0;
  MPI_Comm_rank(state->comm(), &rank);
  return rank;
}

// The arguments of allgather and alltoall, which take the same ones.
struct BlockCall {
  const void *sbuf;
  int scount;
  MPI_Datatype sdtype;
  void *rbuf;
  int rcount;
  MPI_Datatype rdtype;
};

// The bytes of one rank's block, when both sides are contiguous and the same size; nothing
// after counting the fallback otherwise.
std::optional<size_t> block_bytes(CommState *state, Coll coll, const BlockCall &call,
                                  bool in_place) {
  auto recv = contiguous_bytes(call.rdtype, call.rcount);
  auto sent = in_place ? recv : contiguous_bytes(call.sdtype, call.scount);
  if (!recv || !sent) {
    state->fall_back(coll, Fallback::kNotContiguous);
    return std::nullopt;
  }
  if (*sent != *recv) {
    state->fall_back(coll, Fallback::kRefused, "send and receive sizes differ");
    return std::nullopt;
  }
  return recv;
}

// Allgather and alltoall: blocks of bytes, checked and admitted alike; only the Cohort call
// and allgather's in-place send block differ.
int run_blocks(CommState *state, Coll coll, const BlockCall &call, int *rc) {
  const bool in_place = call.sbuf == MPI_IN_PLACE;
  auto block = block_bytes(state, coll, call, in_place);
  if (!block) return 0;
  cohort_team_t team = admit(state, coll, {in_place ? nullptr : call.sbuf, call.rbuf});
  if (team == nullptr) return 0;
  BusyScope busy;
  if (coll == Coll::kAllgather) {
    // In place, this rank's block is already in its slot: Cohort's convention exactly.
    const void *send =
        in_place ? static_cast<const char *>(call.rbuf) + comm_rank(state) * *block : call.sbuf;
    return state->finish(coll, cohort_allgather(team, send, call.rbuf, *block, COHORT_UINT8), rc);
  }
  const void *send = in_place ? call.rbuf : call.sbuf;
  return state->finish(coll, cohort_alltoall(team, send, call.rbuf, *block, COHORT_UINT8), rc);
}

// A reduction's element type and op, or the fallback reason.
std::optional<Fallback> reduction(MPI_Datatype datatype, MPI_Op op, cohort_dtype_t *dtype,
                                  cohort_op_t *cop) {
  auto d = reduction_dtype(datatype);
  if (!d) return Fallback::kDatatype;
  auto o = reduction_op(op);
  if (!o) return Fallback::kOp;
  *dtype = *d;
  *cop = *o;
  return std::nullopt;
}

// An in-place reduce-scatter-block: its buffer and what it reduces.
struct InPlaceBlocks {
  void *buf;  // size blocks of count elements: the input; the result goes to block 0
  int count;
  MPI_Datatype datatype;
  cohort_dtype_t dtype;
  cohort_op_t op;
};

// MPI puts the result in block 0 and leaves the other blocks as they were; Cohort's in-place
// form (NCCL's) puts it in the rank's block instead.  That is the same on rank 0; elsewhere
// Cohort reduces out of place into a block of its own, copied to the front afterwards (the
// input is read only, so the rank's block stays as it was).
int reduce_scatter_in_place(CommState *state, cohort_team_t team, const InPlaceBlocks &call,
                            int *rc) {
  const Coll coll = Coll::kReduceScatterBlock;
  if (comm_rank(state) == 0) {
    return state->finish(
        coll, cohort_reduce_scatter(team, call.buf, call.buf, call.count, call.dtype, call.op), rc);
  }
  int elem = 0;
  MPI_Type_size(call.datatype, &elem);
  const size_t block = static_cast<size_t>(call.count) * static_cast<size_t>(elem);
  std::unique_ptr<char[]> result(new (std::nothrow) char[block]);
  if (result == nullptr) {
    *rc = MPI_ERR_NO_MEM;  // through the error handler, as Open MPI's modules do
    return 1;
  }
  int done = state->finish(
      coll, cohort_reduce_scatter(team, call.buf, result.get(), call.count, call.dtype, call.op),
      rc);
  if (done && *rc == MPI_SUCCESS) std::memcpy(call.buf, result.get(), block);
  return done;
}

}  // namespace
}  // namespace cohort::ompi

using namespace cohort::ompi;

extern "C" {

int coll_cohort_configure(const coll_cohort_params_t *p, coll_cohort_output_fn_t output) {
  configure(*p, output);
  return p->enable ? parse_collectives(p->collectives) : 0;
}

int coll_cohort_busy(void) { return busy() ? 1 : 0; }

coll_cohort_comm_t *coll_cohort_comm_new(MPI_Comm comm) { return new coll_cohort_comm(comm); }

void coll_cohort_comm_free(coll_cohort_comm_t *state) { delete state; }

int coll_cohort_allreduce(coll_cohort_comm_t *state, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, int *rc) {
  const Coll coll = Coll::kAllreduce;
  cohort_dtype_t dtype;
  cohort_op_t cop;
  if (auto reason = reduction(datatype, op, &dtype, &cop)) return state->fall_back(coll, *reason);
  const bool in_place = sbuf == MPI_IN_PLACE;
  cohort_team_t team = admit(state, coll, {in_place ? nullptr : sbuf, rbuf});
  if (team == nullptr) return 0;
  BusyScope busy;
  return state->finish(coll,
                       cohort_allreduce(team, in_place ? rbuf : sbuf, rbuf, count, dtype, cop), rc);
}

int coll_cohort_reduce(coll_cohort_comm_t *state, const void *sbuf, void *rbuf, int count,
                       MPI_Datatype datatype, MPI_Op op, int root, int *rc) {
  const Coll coll = Coll::kReduce;
  cohort_dtype_t dtype;
  cohort_op_t cop;
  if (auto reason = reduction(datatype, op, &dtype, &cop)) return state->fall_back(coll, *reason);
  // The receive buffer counts only at the root, where MPI_IN_PLACE means "input is there".
  const bool is_root = comm_rank(state) == root;
  const bool in_place = is_root && sbuf == MPI_IN_PLACE;
  cohort_team_t team = admit(state, coll, {in_place ? nullptr : sbuf, is_root ? rbuf : nullptr});
  if (team == nullptr) return 0;
  BusyScope busy;
  return state->finish(coll,
                       cohort_reduce(team, in_place ? rbuf : sbuf, is_root ? rbuf : nullptr, count,
                                     dtype, cop, root),
                       rc);
}

int coll_cohort_bcast(coll_cohort_comm_t *state, void *buf, int count, MPI_Datatype datatype,
                      int root, int *rc) {
  const Coll coll = Coll::kBcast;
  auto bytes = contiguous_bytes(datatype, count);
  if (!bytes) return state->fall_back(coll, Fallback::kNotContiguous);
  cohort_team_t team = admit(state, coll, {nullptr, buf});
  if (team == nullptr) return 0;
  BusyScope busy;
  return state->finish(coll, cohort_broadcast(team, buf, buf, *bytes, COHORT_UINT8, root), rc);
}

int coll_cohort_allgather(coll_cohort_comm_t *state, const void *sbuf, int scount,
                          MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                          int *rc) {
  return run_blocks(state, Coll::kAllgather, {sbuf, scount, sdtype, rbuf, rcount, rdtype}, rc);
}

int coll_cohort_reduce_scatter_block(coll_cohort_comm_t *state, const void *sbuf, void *rbuf,
                                     int rcount, MPI_Datatype datatype, MPI_Op op, int *rc) {
  const Coll coll = Coll::kReduceScatterBlock;
  cohort_dtype_t dtype;
  cohort_op_t cop;
  if (auto reason = reduction(datatype, op, &dtype, &cop)) return state->fall_back(coll, *reason);
  const bool in_place = sbuf == MPI_IN_PLACE;
  if (in_place) {
    // The result is copied to the front of the buffer after the call, which only the CPU can do.
    cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
    memory_rule({nullptr, rbuf}, true, cohort_memory_kind, &kind);
    if (kind != COHORT_MEMORY_HOST) {
      return state->fall_back(coll, Fallback::kRefused, "in place on device memory");
    }
  }
  cohort_team_t team = admit(state, coll, {in_place ? nullptr : sbuf, rbuf});
  if (team == nullptr) return 0;
  BusyScope busy;
  if (!in_place) {
    return state->finish(coll, cohort_reduce_scatter(team, sbuf, rbuf, rcount, dtype, cop), rc);
  }
  return reduce_scatter_in_place(state, team, {rbuf, rcount, datatype, dtype, cop}, rc);
}

int coll_cohort_alltoall(coll_cohort_comm_t *state, const void *sbuf, int scount,
                         MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                         int *rc) {
  return run_blocks(state, Coll::kAlltoall, {sbuf, scount, sdtype, rbuf, rcount, rdtype}, rc);
}

int coll_cohort_barrier(coll_cohort_comm_t *state, int *rc) {
  const Coll coll = Coll::kBarrier;
  cohort_team_t team = admit(state, coll, {});  // no buffer: the host rule decides
  if (team == nullptr) return 0;
  BusyScope busy;
  return state->finish(coll, cohort_barrier(team), rc);
}

}  // extern "C"
