// The C entry points the glue calls: each call is checked against the rules (memory, type,
// op, layout) and routed: to Cohort where its buffers are, to Cohort's host path or Open MPI's
// module on host copies of its device buffers (staging.h), or back to Open MPI's module.
//
// The routes, for one rank's buffers:
// - all in host memory: Cohort's host path when coll_cohort_host is on and Cohort takes the
//   type, op and layout; else Open MPI's module;
// - all on the GPU: Cohort on the GPU; what Cohort refuses there (no GPU kernel for it, a
//   posted call, an in-place reduce-scatter) runs on Cohort's host path on staged copies, and
//   what Cohort cannot do at all (MAXLOC, user ops, gaps in a type) on Open MPI's module on
//   staged copies: device memory never reaches a module that would touch it;
// - device memory mixed with host memory: staged, then as host memory.
// Ranks of one blocking call take one route: the GPU when every rank's buffers are there, the
// host's otherwise.  They agree on it over the team now and then per collective and size
// class (CommState::all_on_device); between agreements each takes the remembered route, and a
// rank whose buffers are elsewhere stages them: host buffers onto the GPU (a device pool) to
// join a GPU call, device buffers through host memory to join a host one.
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
  const char *where = "Cohort";  // the path that runs it, for verbose 3
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

// One routed call: its arguments in Cohort's terms and, once staged, its host copies.
struct Route {
  Route(CommState *s, const coll_cohort_args_t &a, bool nonblocking)
      : state(s), call{a, nonblocking, s->rank(), s->size()}, id{a.kind, nonblocking}, args(a) {}
  CommState *state;
  Call call;
  CallId id;
  CallBuffers buffers;
  CohortCall cohort;
  std::unique_ptr<Staging> staging;
  coll_cohort_args_t args;  // the buffers Cohort or Open MPI is given
};

// Runs or posts the call on Cohort with route.args.  Returns the status; on success a
// blocking call is complete (results copied back), a nonblocking one is in *request.
cohort_status_t start(Route &route, cohort_team_t team, coll_cohort_request_t **request) {
  if (!route.call.nonblocking) {
    cohort_status_t s = route.cohort.start(team, route.call, route.args, nullptr);
    if (s != COHORT_SUCCESS) return s;
    route.cohort.finish();
    return route.staging ? route.staging->unstage() : COHORT_SUCCESS;
  }
  cohort_request_t posted = nullptr;
  cohort_status_t s = route.cohort.start(team, route.call, route.args, &posted);
  if (s != COHORT_SUCCESS) return s;
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

// Stages the device buffers: host copies of them in route.args (onto_gpu: device copies of the
// host buffers), or why that failed (pinned or device memory, a copy).
cohort_status_t stage(Route &route, bool onto_gpu = false) {
  StagingPool &pool = onto_gpu ? route.state->device_staging_pool() : route.state->staging_pool();
  route.staging = std::make_unique<Staging>(pool, route.state->staging_cost(route.id));
  return route.staging->stage(route.call, route.buffers, &route.args);
}

// The staged call on Open MPI's module: the glue runs it and ends it with
// coll_cohort_staged_done.
int to_open_mpi(Route &route, const char *why, coll_cohort_request_t **request,
                coll_cohort_args_t *staged) {
  route.state->staged(route.id, StagedTo::kOpenMpi, route.staging->bytes(), why);
  auto *r = new coll_cohort_request;
  r->state = route.state;
  r->id = route.id;
  r->staging = std::move(route.staging);
  *request = r;
  *staged = route.args;
  return COLL_COHORT_STAGED;
}

// A staging failure ends the call with an error: falling back would hand device memory to a
// module that cannot read it.
int staging_failed(Route &route, cohort_status_t s, int *rc) {
  say(kWarning, "%s: staging device memory through host memory failed: %s (%s)", route.id.name(),
      cohort_status_string(s), cohort_last_error());
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
// cannot take the call at all, so Open MPI's module must).
int run_staged(Route &route, std::optional<Fallback> reason, const char *why,
               coll_cohort_request_t **request, coll_cohort_args_t *staged, int *rc) {
  if (cohort_status_t s = stage(route); s != COHORT_SUCCESS) return staging_failed(route, s, rc);
  cohort_team_t team = reason ? nullptr : team_for(route, &reason);
  if (team == nullptr) return to_open_mpi(route, fallback_text(*reason), request, staged);
  const size_t bytes = route.staging->bytes();
  cohort_status_t s = start(route, team, request);
  if (refused(s)) return to_open_mpi(route, cohort_last_error(), request, staged);
  route.state->staged(route.id, StagedTo::kCohort, bytes, why);
  return ran(route, s, request, rc, "Cohort's host path (staged)");
}

// The call runs on the GPU on every rank and nothing is against Cohort: Cohort there, or on
// its host path on staged copies when it refuses (the same answer on every rank).  `mine`:
// this rank's buffers are all on the GPU; else they join the others' on device copies.
int run_on_device(Route &route, bool mine, coll_cohort_request_t **request,
                  coll_cohort_args_t *staged, int *rc) {
  std::optional<Fallback> reason;
  cohort_team_t team = team_for(route, &reason);
  if (team == nullptr) return run_staged(route, reason, nullptr, request, staged, rc);
  // A refused start wrote nothing (in-place reduce-scatter, the one call whose start keeps
  // state, never tries the GPU), so the prepared call serves the staged run as it is.
  const bool host_only = route.cohort.needs_host_memory(route.call);
  if (!host_only) {
    if (!mine) {
      if (cohort_status_t s = stage(route, true); s != COHORT_SUCCESS) {
        return staging_failed(route, s, rc);
      }
      route.state->staged(route.id, StagedTo::kGpu, route.staging->bytes(),
                          "the route agreed for this collective and size is the GPU");
    }
    cohort_status_t s = start(route, team, request);
    if (!refused(s)) {
      return ran(route, s, request, rc, mine ? "Cohort's GPU path" : "Cohort's GPU path (staged)");
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
  hide_empty_device_sides(route.buffers, &route.args);
  BusyScope busy;
  return ran(route, start(route, team, request), request, rc, "Cohort's host path");
}

int route_call(CommState *state, const coll_cohort_args_t &args, bool nonblocking,
               coll_cohort_request_t **request, coll_cohort_args_t *staged, int *rc) {
  Route route(state, args, nonblocking);
  if (busy()) return state->agreeing() ? 0 : state->fall_back(route.id, Fallback::kReentered);
  const char *detail = nullptr;
  std::optional<Fallback> reason = route.cohort.prepare(route.call, &detail);
  if (!route.call.buffers(&route.buffers)) reason = Fallback::kNotContiguous;
  if (!reason && state->failed_before()) reason = Fallback::kAfterFailure;
  const void *pointers[2] = {route.buffers.use[0].region.begin, route.buffers.use[1].region.begin};
  Placement where = placement(pointers, route.buffers.count, cohort_memory_kind);
  // The GPU only when every rank is on it: a blocking call agrees on that; a nonblocking one
  // cannot wait for the others to start, so it always takes the host route.  A barrier has no
  // buffers on any rank: nothing to agree on (with the agreement, a barrier through the
  // component took 9.7 us against Cohort's 1.7 at 4 ranks on an H100).
  const bool on_gpu = where == Placement::kDevice;
  const bool all_on_gpu = !nonblocking && route.call.kind() != COLL_COHORT_BARRIER &&
                          state->all_on_device(route.id, args, on_gpu);
  if (where == Placement::kHost && !all_on_gpu) {
    // One rank alone: nothing to gain over Open MPI's self module, which only copies; it is
    // served for its device memory, which that module would touch.
    if (state->size() == 1) return state->fall_back(route.id, Fallback::kOneRank);
    return run_on_host(route, reason, detail, request, rc);
  }
  BusyScope busy;
  if (all_on_gpu && !reason) return run_on_device(route, on_gpu, request, staged, rc);
  // Staged, the call runs as host memory would; a reason keeps it off Cohort.
  const char *why = reason        ? fallback_text(*reason)
                    : !on_gpu     ? "device and host memory in one call"
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
  if (s == COHORT_SUCCESS) {
    r->call->finish();
    if (r->staging) s = r->staging->unstage();
  }
  *rc = MPI_ERR_OTHER;  // a posted call's checks are behind it: any failure is an error
  r->state->finish(r->id, s, rc, r->where);
  return 1;
}

int coll_cohort_staged_done(coll_cohort_request_t *r, int rc) {
  if (rc == MPI_SUCCESS && r->staging->unstage() != COHORT_SUCCESS) {
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
