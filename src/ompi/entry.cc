// The C entry points the glue calls: each call is checked against the rules (memory, type,
// op) and routed: to Cohort where its buffers are, to Cohort's host path or Open MPI's module
// on host copies of its device buffers (staging.h), or back to Open MPI's module.
//
// The routes, for one rank's buffers:
// - all in host memory: Cohort's host path when coll_cohort_host is on and Cohort takes the
//   type and op; else Open MPI's module;
// - all on the GPU: Cohort on the GPU; what Cohort refuses there (no GPU kernel for it, a
//   posted call, an in-place reduce-scatter) runs on Cohort's host path on staged copies, and
//   what Cohort cannot do at all (MAXLOC, user ops) on Open MPI's module on staged copies:
//   device memory never reaches a module that would touch it;
// - device memory mixed with other memory: staged, then as host memory.
// Ranks of one call take one route.  Every reason to fall back is one every rank shares
// (dispatch.h); what may differ between ranks is absorbed where it is: a datatype with gaps on
// this rank travels packed (packing.h), displacements below the buffer are rebased
// (to_cohort.h), a failure on this rank aborts the team so the others end too (CommState::
// fail).  Where the buffers are may differ too: a blocking call's ranks take the GPU when every
// rank's buffers are there, the host's otherwise.  They agree on it over the team now and then
// per collective and size class (CommState::all_on_device); between agreements each takes the
// remembered route, and a rank whose buffers are elsewhere stages them: host buffers onto the
// GPU (a device pool) to join a GPU call, device buffers through host memory to join a host
// one.  A nonblocking call cannot wait to agree: it always takes the host route.
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "call.h"
#include "coll_cohort.h"
#include "comm_state.h"
#include "component.h"
#include "to_cohort.h"

struct coll_cohort_comm : cohort::ompi::CommState {
  using CommState::CommState;
};

// A call Cohort took without blocking, or one staged onto Open MPI's module: what its end
// needs.
struct coll_cohort_request {
  cohort::ompi::CommState *state = nullptr;
  cohort::ompi::CallId id{COLL_COHORT_BARRIER, false};
  cohort_request_t cohort = nullptr;  // RAN
  std::unique_ptr<cohort::ompi::CohortCall> call;
  std::unique_ptr<cohort::ompi::Staging> staging;
  cohort_status_t staging_error = COHORT_SUCCESS;  // STAGED: a copy in failed (it still ran)
  const char *where = "Cohort";                    // the path that runs it, for verbose 3
};

namespace cohort::ompi {
namespace {

constexpr const char *kCollNames[COLL_COHORT_NUM_KINDS] = {
    "allreduce",      "bcast",    "reduce",    "allgather", "allgatherv", "reduce_scatter_block",
    "reduce_scatter", "alltoall", "alltoallv", "barrier",   "gather",     "gatherv",
    "scatter",        "scatterv", "scan",      "exscan"};

int parse_collectives(const char *list) {
  int mask = 0;
  if (list == nullptr || std::strcmp(list, "all") == 0) return (1 << COLL_COHORT_NUM_KINDS) - 1;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    bool known = false;
    for (int k = 0; k < COLL_COHORT_NUM_KINDS; ++k) {
      if (item == kCollNames[k]) mask |= 1 << k, known = true;
    }
    if (!known) {
      say(kWarning,
          "coll_cohort_collectives names '%s', which is not one of allreduce, bcast, reduce, "
          "allgather, allgatherv, reduce_scatter_block, reduce_scatter, alltoall, alltoallv, "
          "barrier, gather, gatherv, scatter, scatterv, scan, exscan: ignored",
          item.c_str());
    }
  }
  return mask;
}

bool refused(cohort_status_t s) {
  return s == COHORT_ERR_INVALID_ARG || s == COHORT_ERR_NOT_SUPPORTED;
}

constexpr Target kOnHost[2] = {Target::kHost, Target::kHost};

// One routed call: its arguments in Cohort's terms and, once staged, its copies.
struct Route {
  Route(CommState *s, const coll_cohort_args_t &a, bool nonblocking)
      : state(s), call{a, nonblocking, s->rank(), s->size()}, id{a.kind, nonblocking}, args(a) {}
  CommState *state;
  Call call;
  CallId id;
  CallBuffers buffers;
  CohortCall cohort;
  std::unique_ptr<Staging> staging;
  coll_cohort_args_t args;       // the buffers Cohort or Open MPI is given
  Target where = Target::kHost;  // the memory Cohort runs it on
};

// Runs or posts the call on Cohort with route.args.  Returns the status; on success a
// blocking call is complete (results copied back), a nonblocking one is in *request.
cohort_status_t start(Route &route, cohort_team_t team, coll_cohort_request_t **request) {
  CohortCall &cohort = route.cohort;
  StagingPools &pools = route.state->pools();
  if (!route.call.nonblocking) {
    cohort_status_t s = cohort.start(team, route.call, route.args, route.where, pools, nullptr);
    if (s == COHORT_SUCCESS && cohort.packed_bytes() > 0) {
      route.state->packed(route.id, cohort.packed_bytes());
    }
    if (s == COHORT_SUCCESS) s = cohort.finish();
    if (s == COHORT_SUCCESS && route.staging) s = route.staging->unstage();
    return s;
  }
  cohort_request_t posted = nullptr;
  cohort_status_t s = cohort.start(team, route.call, route.args, route.where, pools, &posted);
  if (s != COHORT_SUCCESS) return s;
  if (cohort.packed_bytes() > 0) route.state->packed(route.id, cohort.packed_bytes());
  auto *r = new coll_cohort_request;
  r->state = route.state;
  r->id = route.id;
  r->cohort = posted;
  r->call = std::make_unique<CohortCall>(std::move(route.cohort));
  r->staging = std::move(route.staging);
  *request = r;
  return COHORT_SUCCESS;
}

// The end of a call Cohort took: a blocking one is counted and its status turned into MPI's;
// a posted one is counted when it completes (coll_cohort_request_test).
int ran(Route &route, cohort_status_t s, coll_cohort_request_t **request, int *rc,
        const char *where) {
  if (s == COHORT_SUCCESS && *request != nullptr) {
    (*request)->where = where;
    return COLL_COHORT_RAN;
  }
  return route.state->finish(route.id, s, rc, where);
}

// Copies the buffers that are not where `targets` wants each side into route.args, or says
// why that failed (pinned or device memory, a copy).
cohort_status_t stage(Route &route, const Target targets[2]) {
  route.staging =
      std::make_unique<Staging>(route.state->pools(), route.state->staging_cost(route.id));
  return route.staging->stage(route.call, route.buffers, targets, &route.args);
}

// The staged call on Open MPI's module: the glue runs it and ends it with
// coll_cohort_staged_done.  `copy_error`: a copy into the staged buffers failed, so the call
// runs (the other ranks wait for this one) but ends with an error here.
int to_open_mpi(Route &route, const char *why, coll_cohort_request_t **request,
                coll_cohort_args_t *staged, cohort_status_t copy_error = COHORT_SUCCESS) {
  route.state->staged(route.id, StagedTo::kOpenMpi, route.staging->bytes(), why);
  auto *r = new coll_cohort_request;
  r->state = route.state;
  r->id = route.id;
  r->staging = std::move(route.staging);
  r->staging_error = copy_error;
  *request = r;
  *staged = route.args;
  return COLL_COHORT_STAGED;
}

// Staging for Open MPI's module that left no buffer to run the call on (out of memory): the
// call ends with an error here.  Falling back would hand device memory to a module that cannot
// read it; the other ranks wait for this one in Open MPI's module, which has no timeout, so
// the warning says which call and why.
int no_staged_buffers(Route &route, cohort_status_t s, int *rc) {
  say(kWarning,
      "%s: no host memory to stage device memory through: %s (%s); this rank leaves the call, "
      "which the other ranks run on Open MPI's module",
      route.id.name(), cohort_status_string(s), cohort_last_error());
  *rc = s == COHORT_ERR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
  return COLL_COHORT_RAN;
}

// The communicator's team: made at the first blocking call that needs it; a nonblocking call
// takes it only once it is there.
cohort_team_t team_for(Route &route, std::optional<Fallback> *reason) {
  cohort_team_t team =
      route.call.nonblocking ? route.state->ready_team() : route.state->team(route.id);
  if (team == nullptr) *reason = route.call.nonblocking ? Fallback::kNoTeamYet : Fallback::kNoTeam;
  return team;
}

// Host copies of the device buffers, run where host memory would run (`reason`: why Cohort
// cannot take the call at all, so Open MPI's module must).  The team comes first: making it is
// collective, and a rank whose staging fails still made it with the others.
int run_staged(Route &route, std::optional<Fallback> reason, const char *why,
               coll_cohort_request_t **request, coll_cohort_args_t *staged, int *rc) {
  cohort_team_t team = reason ? nullptr : team_for(route, &reason);
  cohort_status_t s = stage(route, kOnHost);
  if (team == nullptr) {
    if (!route.staging->usable()) return no_staged_buffers(route, s, rc);
    return to_open_mpi(route, fallback_text(*reason), request, staged, s);
  }
  if (s != COHORT_SUCCESS) {
    return route.state->fail(route.id, s, rc, "staging device memory through host memory failed");
  }
  route.where = Target::kHost;
  const size_t bytes = route.staging->bytes();
  s = start(route, team, request);
  if (refused(s)) return to_open_mpi(route, cohort_last_error(), request, staged);
  route.state->staged(route.id, StagedTo::kCohort, bytes, why);
  return ran(route, s, request, rc, "Cohort's host path (staged)");
}

// The call runs on the GPU on every rank and nothing is against Cohort: Cohort there, or on
// its host path on staged copies when it refuses (the same answer on every rank).  This
// rank's buffers that are not device memory join the others' on device copies; the sides that
// travel packed are packed on the host (device ones staged there first), then copied up.
int run_on_device(Route &route, coll_cohort_request_t **request, coll_cohort_args_t *staged,
                  int *rc) {
  std::optional<Fallback> reason;
  cohort_team_t team = team_for(route, &reason);
  if (team == nullptr) return run_staged(route, reason, nullptr, request, staged, rc);
  // A refused start wrote nothing (in-place reduce-scatter, the one call whose start keeps
  // state, never tries the GPU), so the prepared call serves the staged run as it is.
  const bool host_only = route.cohort.needs_host_memory(route.call);
  if (!host_only) {
    const Target targets[2] = {route.cohort.packed(Side::kSend) ? Target::kHost : Target::kDevice,
                               route.cohort.packed(Side::kRecv) ? Target::kHost : Target::kDevice};
    if (cohort_status_t s = stage(route, targets); s != COHORT_SUCCESS) {
      return route.state->fail(route.id, s, rc, "staging for the GPU failed");
    }
    const size_t onto_gpu = route.staging->bytes_to(Target::kDevice);
    if (onto_gpu > 0) {
      route.state->staged(route.id, StagedTo::kGpu, onto_gpu,
                          "the route agreed for this collective and size is the GPU");
    }
    route.where = Target::kDevice;
    cohort_status_t s = start(route, team, request);
    if (!refused(s)) {
      return ran(route, s, request, rc, onto_gpu == 0 ? kGpuPath : "Cohort's GPU path (staged)");
    }
  }
  const std::string why = host_only
                              ? "in place, the result goes to the front of the buffer on the CPU"
                              : cohort_last_error();
  return run_staged(route, std::nullopt, why.c_str(), request, staged, rc);
}

// Host memory: Cohort's host path when it may and can take the call, else Open MPI.
int run_on_host(Route &route, std::optional<Fallback> reason, const char *detail,
                coll_cohort_request_t **request, int *rc) {
  if (!params().host_buffers) return route.state->fall_back(route.id, Fallback::kHostBuffer);
  if (reason) return route.state->fall_back(route.id, *reason, detail);
  cohort_team_t team = team_for(route, &reason);
  if (team == nullptr) return route.state->fall_back(route.id, *reason);
  hide_empty_sides(route.call, route.buffers, kOnHost, route.state->pools(), &route.args);
  route.where = Target::kHost;
  BusyScope busy;
  return ran(route, start(route, team, request), request, rc, "Cohort's host path");
}

int route_call(CommState *state, const coll_cohort_args_t &args, bool nonblocking,
               coll_cohort_request_t **request, coll_cohort_args_t *staged, int *rc) {
  Route route(state, args, nonblocking);
  if (busy()) return state->agreeing() ? 0 : state->fall_back(route.id, Fallback::kReentered);
  const char *detail = nullptr;
  std::optional<Fallback> reason = route.cohort.prepare(route.call, &detail);
  if (!route.call.buffers(&route.buffers)) {
    reason = Fallback::kRefused;
    detail = "MPI cannot tell the extent of a datatype the call uses";
  }
  const void *pointers[2] = {route.buffers.use[0].region.begin, route.buffers.use[1].region.begin};
  Placement where = placement(pointers, route.buffers.count, cohort_memory_kind);
  // The GPU only when every rank is on it: a blocking call agrees on that; a nonblocking one
  // cannot wait for the others to start, so it always takes the host route.  A barrier has no
  // buffers on any rank: nothing to agree on (with the agreement, a barrier through the
  // component took 9.7 us against Cohort's 1.7 at 4 ranks on an H100).
  const bool on_gpu = where == Placement::kDevice;
  const bool agreed = !nonblocking && route.call.kind() != COLL_COHORT_BARRIER;
  if (on_gpu && agreed && !reason) {
    // Before the agreement, where a sync of the registration cache may register them.
    const size_t bytes[2] = {route.buffers.use[0].region.bytes, route.buffers.use[1].region.bytes};
    state->note_cached(route.id, pointers, bytes, route.buffers.count);
  }
  const bool all_on_gpu = agreed && state->all_on_device(route.id, args, on_gpu);
  if (where == Placement::kHost && !all_on_gpu) {
    // One rank alone: nothing to gain over Open MPI's self module, which only copies; it is
    // served for its device memory, which that module would touch.
    if (state->size() == 1) return state->fall_back(route.id, Fallback::kOneRank);
    return run_on_host(route, reason, detail, request, rc);
  }
  BusyScope busy;
  if (all_on_gpu && !reason) return run_on_device(route, request, staged, rc);
  // Staged, the call runs as host memory would; a reason keeps it off Cohort.
  const char *why = reason        ? fallback_text(*reason)
                    : !on_gpu     ? "device memory with other memory in one call"
                    : nonblocking ? "nonblocking (the GPU path takes blocking calls)"
                                  : "another rank's buffers are in host memory";
  if (!params().host_buffers && !reason) reason = Fallback::kHostBuffer;
  return run_staged(route, reason, why, request, staged, rc);
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

int coll_cohort_call(coll_cohort_comm_t *state, const coll_cohort_args_t *args, int nonblocking,
                     coll_cohort_request_t **request, coll_cohort_args_t *staged, int *rc) {
  *request = nullptr;
  return route_call(state, *args, nonblocking != 0, request, staged, rc);
}

int coll_cohort_request_test(coll_cohort_request_t *r, int *rc) {
  cohort_status_t s = cohort_request_test(r->cohort);
  if (s == COHORT_IN_PROGRESS) return 0;
  if (s == COHORT_SUCCESS) s = r->call->finish();
  if (s == COHORT_SUCCESS && r->staging) s = r->staging->unstage();
  // A posted call's checks are behind it: any failure is a failure, never a fallback.
  if (s == COHORT_SUCCESS) {
    r->state->finish(r->id, s, rc, r->where);
  } else {
    r->state->fail(r->id, s, rc);
  }
  return 1;
}

int coll_cohort_staged_done(coll_cohort_request_t *r, int rc) {
  if (rc == MPI_SUCCESS && r->staging_error != COHORT_SUCCESS) {
    say(kWarning, "%s: copying device memory into the host copies it ran on failed: %s",
        r->id.name(), cohort_status_string(r->staging_error));
    rc = MPI_ERR_OTHER;
  } else if (rc == MPI_SUCCESS && r->staging->unstage() != COHORT_SUCCESS) {
    say(kWarning, "%s: copying the result back to device memory failed: %s", r->id.name(),
        cohort_last_error());
    rc = MPI_ERR_OTHER;
  }
  delete r;
  return rc;
}

void coll_cohort_request_free(coll_cohort_request_t *r) {
  if (r->cohort != nullptr) cohort_request_free(r->cohort);
  delete r;
}

}  // extern "C"
