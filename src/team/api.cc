// The C API of teams.  Handles are opaque ids looked up in a registry, never dereferenced,
// so a destroyed or forged handle gets a named error instead of a crash.
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "core/clock.h"
#include "core/oob_user.h"
#include "core/rendezvous.h"
#include "team/api_calls.h"
#include "team/report.h"
#include "team/team.h"

namespace cohort {
namespace {

// Live objects by handle; ids are never reused, so a stale handle stays invalid forever.
template <typename Handle, typename Value>
class Registry {
 public:
  // How errors name the objects: "team", "destroyed", "created".
  struct Names {
    const char *noun;
    const char *ended;
    const char *begun;
  };

  Registry(uintptr_t first_id, Names names) : next_id_(first_id), names_(names) {}

  Handle add(std::shared_ptr<Value> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    uintptr_t id = next_id_;
    next_id_ += 16;
    values_.emplace(id, std::move(value));
    return reinterpret_cast<Handle>(id);
  }

  // The live object of `handle`, or COHORT_ERR_INVALID_ARG naming the handle.
  Status find(Handle handle, std::shared_ptr<Value> *out) {
    if (handle == nullptr) return null_handle();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == values_.end()) return not_live(handle, "");
    *out = it->second;
    return COHORT_SUCCESS;
  }

  // Drops the registry's reference (the last one releases the object), or the same error.
  Status remove(Handle handle) {
    if (handle == nullptr) return null_handle();
    std::shared_ptr<Value> removed;  // declared before the lock: released after it
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == values_.end()) return not_live(handle, " twice");
    removed = std::move(it->second);
    values_.erase(it);
    return COHORT_SUCCESS;
  }

 private:
  Status null_handle() const { return failf(COHORT_ERR_INVALID_ARG, "%s is NULL", names_.noun); }
  Status not_live(Handle handle, const char *again) const {
    return failf(COHORT_ERR_INVALID_ARG, "%s handle %p is not a live %s (%s%s, or never %s)",
                 names_.noun, static_cast<void *>(handle), names_.noun, names_.ended, again,
                 names_.begun);
  }

  std::mutex mutex_;
  uintptr_t next_id_;
  const Names names_;
  std::unordered_map<uintptr_t, std::shared_ptr<Value>> values_;
};

Registry<cohort_team_t, TeamImpl> &registry() {
  // Outlives static destructors that may still call us.
  static auto *r =
      new Registry<cohort_team_t, TeamImpl>(0xc0400010, {"team", "destroyed", "created"});
  return *r;
}

// A posted collective and the team it runs on (which it keeps alive).
struct PostedRequest {
  std::shared_ptr<TeamImpl> team;
  std::shared_ptr<CollRequest> request;
};

// A registered buffer (cohort_mem_register) and its team (destroying the team releases the
// registration's mappings; the handle then names no live team).
struct MemRegistration {
  std::weak_ptr<TeamImpl> team;
  int slot = -1;
};

Registry<cohort_mem_reg_t, MemRegistration> &registrations() {
  static auto *r = new Registry<cohort_mem_reg_t, MemRegistration>(
      0xc0600010, {"registration", "deregistered", "registered"});
  return *r;
}

Registry<cohort_request_t, PostedRequest> &requests() {
  static auto *r =
      new Registry<cohort_request_t, PostedRequest>(0xc0500010, {"request", "freed", "posted"});
  return *r;
}

Status lookup(cohort_team_t handle, std::shared_ptr<TeamImpl> *team) {
  return registry().find(handle, team);
}

// Looks the handle up and checks the team finished creation.
Status ready_team(cohort_team_t handle, std::shared_ptr<TeamImpl> *team) {
  Status s = lookup(handle, team);
  return is_error(s) ? s : (*team)->check_ready();
}

// A C API call that reads a ready team: its outputs checked first (`outputs_given`, else the
// error `missing`), exceptions kept inside; `read` fills them from the team's info.
template <typename Read>
Status read_team(const char *call, cohort_team_t handle, bool outputs_given, const char *missing,
                 Read &&read) {
  return guarded(call, [&]() -> Status {
    if (!outputs_given) return fail(COHORT_ERR_INVALID_ARG, missing);
    std::shared_ptr<TeamImpl> team;
    Status s = ready_team(handle, &team);
    return is_error(s) ? s : read(team->info());
  });
}

// Posts the creation of a team over the caller's OOB, checked first.
Status post(const cohort_oob_t *oob, const cohort_team_config_t *config,
            std::shared_ptr<TeamImpl> *team) {
  Status s = validate_user_oob(oob);
  return is_error(s) ? s : TeamImpl::post_oob(oob, config, team);
}

// A team over a unique id's socket OOB.
struct UniqueIdSource {
  const cohort_unique_id_t *id;
  int size;
  int rank;
};

Status post(UniqueIdSource source, const cohort_team_config_t *config,
            std::shared_ptr<TeamImpl> *team) {
  if (source.id == nullptr) return fail(COHORT_ERR_INVALID_ARG, "id is NULL");
  return TeamImpl::post_socket(*source.id, source.size, source.rank, config, team);
}

// Team creation through the C API.
template <typename Source>
Status create(const char *call, Source source, const cohort_team_config_t *config, bool blocking,
              cohort_team_t *out) {
  return create_team(
      call, [&](std::shared_ptr<TeamImpl> *team) { return post(source, config, team); }, blocking,
      out);
}

}  // namespace

// A blocking creation returns the handle only for a team every rank agreed is ready.
Status create_team(const char *call, const std::function<Status(std::shared_ptr<TeamImpl> *)> &post,
                   bool blocking, cohort_team_t *out) {
  return guarded(call, [&]() -> Status {
    if (out == nullptr) return fail(COHORT_ERR_INVALID_ARG, "team (output) is NULL");
    std::shared_ptr<TeamImpl> team;
    Status s = post(&team);
    if (!is_error(s) && blocking) s = team->wait();
    if (is_error(s)) return s;
    *out = registry().add(team);
    return COHORT_SUCCESS;
  });
}

// A collective through the C API: the team's handle resolved, exceptions kept inside.
Status run_collective(const char *call, cohort_team_t handle, const CollCall &args) {
  return guarded(call, [&]() -> Status {
    std::shared_ptr<TeamImpl> team;
    Status s = ready_team(handle, &team);
    if (is_error(s)) return s;
    return team->colls().run(args);
  });
}

// A stream-ordered collective through the C API: enqueued on `stream`, not waited for.
Status enqueue_collective(const char *call, cohort_team_t handle, const CollCall &args,
                          void *stream) {
  return guarded(call, [&]() -> Status {
    std::shared_ptr<TeamImpl> team;
    Status s = ready_team(handle, &team);
    if (is_error(s)) return s;
    return team->colls().enqueue(args, stream);
  });
}

// A posted collective through the C API: a request handle for test / wait / free.
Status post_collective(const char *call, cohort_team_t handle, const CollCall &args,
                       cohort_request_t *out) {
  return guarded(call, [&]() -> Status {
    if (out == nullptr) return failf(COHORT_ERR_INVALID_ARG, "%s: request (output) is NULL", call);
    auto posted = std::make_shared<PostedRequest>();
    Status s = ready_team(handle, &posted->team);
    if (is_error(s)) return s;
    s = posted->team->colls().post(args, &posted->request);
    if (is_error(s)) return s;
    *out = requests().add(std::move(posted));
    return COHORT_SUCCESS;
  });
}

namespace {

// Test or wait on a request handle, on its team.
Status on_request(const char *call, cohort_request_t handle,
                  Status (CollFront::*run)(const std::shared_ptr<CollRequest> &)) {
  return guarded(call, [&]() -> Status {
    std::shared_ptr<PostedRequest> posted;
    Status s = requests().find(handle, &posted);
    if (is_error(s)) return s;
    return (posted->team->colls().*run)(posted->request);
  });
}

// Send/recv: between cohort_group_start and cohort_group_end (per thread, nestable) the
// operations are checked and collected; the outermost end posts each team's operations as one
// request and waits for all.  Outside a group an operation is a group of one.
struct GroupOp {
  std::shared_ptr<TeamImpl> team;
  P2POp op;
};

struct GroupState {
  int depth = 0;
  std::vector<GroupOp> ops;
  Status error = COHORT_SUCCESS;  // the first failed check: the group runs nothing
  std::string error_text;
};

thread_local GroupState t_group;

Status run_group(std::vector<GroupOp> ops) {
  std::vector<std::shared_ptr<TeamImpl>> teams;  // in order of first use
  for (const GroupOp &g : ops) {
    bool seen = false;
    for (const auto &t : teams) seen = seen || t == g.team;
    if (!seen) teams.push_back(g.team);
  }
  // A team's stream-ordered operations are only enqueued: no request to wait for.  A team
  // that refuses its operations posts nothing; those posted on teams before it still run
  // (their peers wait for them) and are waited for.
  std::vector<std::shared_ptr<CollRequest>> requests(teams.size());
  Status result = COHORT_SUCCESS;
  std::string why;
  auto failed = [&](Status s) {
    if (!is_error(s) || is_error(result)) return;
    result = s;
    why = last_error();
  };
  for (size_t t = 0; t < teams.size() && !is_error(result); ++t) {
    std::vector<P2POp> mine;
    for (const GroupOp &g : ops) {
      if (g.team == teams[t]) mine.push_back(g.op);
    }
    failed(teams[t]->colls().post_p2p(mine, &requests[t]));
  }
  // Every team's request moves at each pass: a group spanning teams cannot wait on itself.
  Backoff backoff;
  for (size_t done = 0; done < teams.size();) {
    done = 0;
    bool moved = false;
    for (size_t t = 0; t < teams.size(); ++t) {
      Status s = requests[t] ? teams[t]->colls().test(requests[t]) : COHORT_SUCCESS;
      if (s == COHORT_IN_PROGRESS) {
        moved = moved || requests[t]->moved;
        continue;
      }
      ++done;
      failed(s);
    }
    if (done == teams.size()) break;
    if (moved) backoff.reset();
    backoff.pause();
  }
  // Device buffers: the bytes received are copied back to them after the requests' end.
  for (size_t t = 0; t < teams.size(); ++t) {
    if (requests[t]) failed(teams[t]->colls().settle_p2p(requests[t]));
  }
  return is_error(result) ? fail(result, why) : result;
}

Status p2p(const char *call, cohort_team_t handle, P2POp op) {
  return guarded(call, [&]() -> Status {
    std::shared_ptr<TeamImpl> team;
    Status s = ready_team(handle, &team);
    if (!is_error(s)) s = team->colls().check_p2p(&op);
    if (t_group.depth == 0) return is_error(s) ? s : run_group({GroupOp{team, op}});
    if (is_error(s)) {
      if (!is_error(t_group.error)) {
        t_group.error = s;
        t_group.error_text = last_error();
      }
      return s;
    }
    t_group.ops.push_back(GroupOp{std::move(team), op});
    return COHORT_SUCCESS;
  });
}

// Whether the team's plan has `channel`.
Status check_channel(const TeamInfo &info, int channel) {
  int channels = info.plan.channels;
  if (channel < 0 || channel >= channels) {
    return failf(COHORT_ERR_INVALID_ARG, "channel=%d: the plan has channels 0..%d", channel,
                 channels - 1);
  }
  return COHORT_SUCCESS;
}

}  // namespace
}  // namespace cohort

using cohort::Status;
using cohort::TeamImpl;

extern "C" {

cohort_status_t cohort_team_create_oob(const cohort_oob_t *oob, const cohort_team_config_t *config,
                                       cohort_team_t *team) {
  return cohort::create("cohort_team_create_oob", oob, config, /*blocking=*/true, team);
}

cohort_status_t cohort_team_create_oob_post(const cohort_oob_t *oob,
                                            const cohort_team_config_t *config,
                                            cohort_team_t *team) {
  return cohort::create("cohort_team_create_oob_post", oob, config, /*blocking=*/false, team);
}

cohort_status_t cohort_unique_id_create(cohort_unique_id_t *id) {
  return cohort::guarded("cohort_unique_id_create",
                         [&]() -> cohort_status_t { return cohort::unique_id_create(id); });
}

cohort_status_t cohort_team_create_unique_id(const cohort_unique_id_t *id, int size, int rank,
                                             const cohort_team_config_t *config,
                                             cohort_team_t *team) {
  return cohort::create("cohort_team_create_unique_id", cohort::UniqueIdSource{id, size, rank},
                        config, /*blocking=*/true, team);
}

cohort_status_t cohort_team_create_unique_id_post(const cohort_unique_id_t *id, int size, int rank,
                                                  const cohort_team_config_t *config,
                                                  cohort_team_t *team) {
  return cohort::create("cohort_team_create_unique_id_post", cohort::UniqueIdSource{id, size, rank},
                        config, /*blocking=*/false, team);
}

cohort_status_t cohort_team_create_test(cohort_team_t handle) {
  return cohort::guarded("cohort_team_create_test", [&]() -> cohort_status_t {
    std::shared_ptr<TeamImpl> team;
    Status s = cohort::lookup(handle, &team);
    return cohort::is_error(s) ? s : team->progress();
  });
}

cohort_status_t cohort_team_split(cohort_team_t parent, int color, int key,
                                  const cohort_team_config_t *config, cohort_team_t *child) {
  return cohort::guarded("cohort_team_split", [&]() -> cohort_status_t {
    if (child == nullptr) return cohort::fail(COHORT_ERR_INVALID_ARG, "child (output) is NULL");
    std::shared_ptr<TeamImpl> team;
    Status s = cohort::lookup(parent, &team);
    if (cohort::is_error(s)) return s;
    std::shared_ptr<TeamImpl> created;
    s = team->split(color, key, config, &created);
    if (cohort::is_error(s)) return s;
    *child = created ? cohort::registry().add(std::move(created)) : nullptr;
    return COHORT_SUCCESS;
  });
}

cohort_status_t cohort_team_destroy(cohort_team_t handle) {
  return cohort::guarded("cohort_team_destroy", [&]() -> cohort_status_t {
    return cohort::registry().remove(handle);  // the last reference releases the team
  });
}

cohort_status_t cohort_team_abort(cohort_team_t handle) {
  return cohort::guarded("cohort_team_abort", [&]() -> cohort_status_t {
    std::shared_ptr<TeamImpl> team;
    Status s = cohort::lookup(handle, &team);
    if (cohort::is_error(s)) return s;
    team->abort();
    return COHORT_SUCCESS;
  });
}

cohort_status_t cohort_team_get_async_error(cohort_team_t handle, cohort_status_t *async_error) {
  return cohort::guarded("cohort_team_get_async_error", [&]() -> cohort_status_t {
    if (async_error == nullptr) {
      return cohort::fail(COHORT_ERR_INVALID_ARG, "async_error (output) is NULL");
    }
    std::shared_ptr<TeamImpl> team;
    Status s = cohort::lookup(handle, &team);
    if (cohort::is_error(s)) return s;
    *async_error = team->async_error();
    return COHORT_SUCCESS;
  });
}

// A query of a ready team: `value` reads the team's TeamInfo `t`.
#define COHORT_TEAM_QUERY(function, type, out, value)                                   \
  cohort_status_t function(cohort_team_t team, type *out) {                             \
    return cohort::read_team(#function, team, out != nullptr, #out " (output) is NULL", \
                             [&](const cohort::TeamInfo &t) {                           \
                               *out = value;                                            \
                               return COHORT_SUCCESS;                                   \
                             });                                                        \
  }

COHORT_TEAM_QUERY(cohort_team_size, int, size, t.size)
COHORT_TEAM_QUERY(cohort_team_rank, int, rank, t.rank)
COHORT_TEAM_QUERY(cohort_team_cuda_device, int, device, t.peers[t.rank].cuda_device)
COHORT_TEAM_QUERY(cohort_team_node_count, int, node_count, t.layout.node_count)
COHORT_TEAM_QUERY(cohort_team_node_index, int, node_index, t.layout.node_of_rank[t.rank])
COHORT_TEAM_QUERY(cohort_team_local_rank, int, local_rank, t.layout.local_rank[t.rank])
COHORT_TEAM_QUERY(cohort_team_local_size, int, local_size, t.layout.local_size[t.rank])
COHORT_TEAM_QUERY(cohort_team_host_id, uint64_t, host_id, t.peers[t.rank].host_id)

cohort_status_t cohort_team_peer_info(cohort_team_t handle, int rank, cohort_peer_info_t *info) {
  return cohort::read_team(
      "cohort_team_peer_info", handle, info != nullptr, "info (output) is NULL",
      [&](const cohort::TeamInfo &t) {
        if (rank < 0 || rank >= t.size) {
          return cohort::failf(COHORT_ERR_INVALID_ARG, "rank=%d is outside the team (size %d)",
                               rank, t.size);
        }
        *info = cohort::to_public_peer_info(t.peers[rank], rank, t.layout.node_of_rank[rank],
                                            t.layout.local_rank[rank]);
        return COHORT_SUCCESS;
      });
}

cohort_status_t cohort_team_plan_info(cohort_team_t handle, cohort_plan_info_t *info) {
  return cohort::read_team("cohort_team_plan_info", handle, info != nullptr,
                           "info (output) is NULL", [&](const cohort::TeamInfo &t) {
                             const cohort::topo::Plan &plan = t.plan;
                             info->channels = plan.channels;
                             info->bw_per_channel = plan.bw;
                             info->intra_path = cohort::topo::path_type_name(plan.intra_type);
                             info->net_path = cohort::topo::path_type_name(plan.net_type);
                             info->nodes = plan.nodes;
                             info->hash = plan.hash;
                             return COHORT_SUCCESS;
                           });
}

cohort_status_t cohort_team_plan_ring(cohort_team_t handle, int channel, int *prev, int *next) {
  return cohort::read_team("cohort_team_plan_ring", handle, prev != nullptr && next != nullptr,
                           "prev or next (output) is NULL", [&](const cohort::TeamInfo &t) {
                             Status s = cohort::check_channel(t, channel);
                             if (cohort::is_error(s)) return s;
                             *prev = t.plan.ring_prev(channel, t.rank);
                             *next = t.plan.ring_next(channel, t.rank);
                             return COHORT_SUCCESS;
                           });
}

cohort_status_t cohort_team_plan_tree(cohort_team_t handle, int channel, int *up, int down[3]) {
  return cohort::read_team("cohort_team_plan_tree", handle, up != nullptr && down != nullptr,
                           "up or down (output) is NULL", [&](const cohort::TeamInfo &t) {
                             Status s = cohort::check_channel(t, channel);
                             if (cohort::is_error(s)) return s;
                             const cohort::topo::TreeLinks &links = t.plan.trees[channel][t.rank];
                             *up = links.up;
                             for (int k = 0; k < 3; ++k) down[k] = links.down[k];
                             return COHORT_SUCCESS;
                           });
}

// The C API's collectives: `handle` is the team, `request` (posted ones) the output.
#define COHORT_CALL(collective, src, dst, count, dtype, op, root)              \
  cohort::CollCall {                                                           \
    { cohort::coll::Collective::collective, src, dst, count, dtype, op, root } \
  }
#define COHORT_RUN(call, ...) cohort::run_collective(call, handle, COHORT_CALL(__VA_ARGS__))
#define COHORT_POSTED(call, ...) \
  cohort::post_collective(call, handle, COHORT_CALL(__VA_ARGS__), request)
#define COHORT_ENQUEUE(call, ...) \
  cohort::enqueue_collective(call, handle, COHORT_CALL(__VA_ARGS__), stream)

cohort_status_t cohort_allreduce_stream(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                        size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                        void *stream) {
  return COHORT_ENQUEUE("cohort_allreduce_stream", kAllreduce, sendbuf, recvbuf, count, dtype, op,
                        0);
}

cohort_status_t cohort_reduce_stream(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                     size_t count, cohort_dtype_t dtype, cohort_op_t op, int root,
                                     void *stream) {
  return COHORT_ENQUEUE("cohort_reduce_stream", kReduce, sendbuf, recvbuf, count, dtype, op, root);
}

cohort_status_t cohort_broadcast_stream(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                        size_t count, cohort_dtype_t dtype, int root,
                                        void *stream) {
  return COHORT_ENQUEUE("cohort_broadcast_stream", kBroadcast, sendbuf, recvbuf, count, dtype,
                        COHORT_SUM, root);
}

cohort_status_t cohort_allgather_stream(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                        size_t sendcount, cohort_dtype_t dtype, void *stream) {
  return COHORT_ENQUEUE("cohort_allgather_stream", kAllgather, sendbuf, recvbuf, sendcount, dtype,
                        COHORT_SUM, 0);
}

cohort_status_t cohort_reduce_scatter_stream(cohort_team_t handle, const void *sendbuf,
                                             void *recvbuf, size_t recvcount, cohort_dtype_t dtype,
                                             cohort_op_t op, void *stream) {
  return COHORT_ENQUEUE("cohort_reduce_scatter_stream", kReduceScatter, sendbuf, recvbuf, recvcount,
                        dtype, op, 0);
}

cohort_status_t cohort_alltoall_stream(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                       size_t count, cohort_dtype_t dtype, void *stream) {
  return COHORT_ENQUEUE("cohort_alltoall_stream", kAlltoall, sendbuf, recvbuf, count, dtype,
                        COHORT_SUM, 0);
}

cohort_status_t cohort_barrier_stream(cohort_team_t handle, void *stream) {
  return COHORT_ENQUEUE("cohort_barrier_stream", kBarrier, nullptr, nullptr, 0, COHORT_INT8,
                        COHORT_SUM, 0);
}

cohort_status_t cohort_allreduce(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                 size_t count, cohort_dtype_t dtype, cohort_op_t op) {
  return COHORT_RUN("cohort_allreduce", kAllreduce, sendbuf, recvbuf, count, dtype, op, 0);
}

cohort_status_t cohort_reduce(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                              size_t count, cohort_dtype_t dtype, cohort_op_t op, int root) {
  return COHORT_RUN("cohort_reduce", kReduce, sendbuf, recvbuf, count, dtype, op, root);
}

cohort_status_t cohort_broadcast(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                 size_t count, cohort_dtype_t dtype, int root) {
  return COHORT_RUN("cohort_broadcast", kBroadcast, sendbuf, recvbuf, count, dtype, COHORT_SUM,
                    root);
}

cohort_status_t cohort_allgather(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                 size_t sendcount, cohort_dtype_t dtype) {
  return COHORT_RUN("cohort_allgather", kAllgather, sendbuf, recvbuf, sendcount, dtype, COHORT_SUM,
                    0);
}

cohort_status_t cohort_reduce_scatter(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                      size_t recvcount, cohort_dtype_t dtype, cohort_op_t op) {
  return COHORT_RUN("cohort_reduce_scatter", kReduceScatter, sendbuf, recvbuf, recvcount, dtype, op,
                    0);
}

cohort_status_t cohort_alltoall(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                size_t count, cohort_dtype_t dtype) {
  return COHORT_RUN("cohort_alltoall", kAlltoall, sendbuf, recvbuf, count, dtype, COHORT_SUM, 0);
}

cohort_status_t cohort_barrier(cohort_team_t handle) {
  return COHORT_RUN("cohort_barrier", kBarrier, nullptr, nullptr, 0, COHORT_INT8, COHORT_SUM, 0);
}

cohort_status_t cohort_gather(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                              size_t sendcount, cohort_dtype_t dtype, int root) {
  return COHORT_RUN("cohort_gather", kGather, sendbuf, recvbuf, sendcount, dtype, COHORT_SUM, root);
}

cohort_status_t cohort_scatter(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                               size_t recvcount, cohort_dtype_t dtype, int root) {
  return COHORT_RUN("cohort_scatter", kScatter, sendbuf, recvbuf, recvcount, dtype, COHORT_SUM,
                    root);
}

cohort_status_t cohort_scan(cohort_team_t handle, const void *sendbuf, void *recvbuf, size_t count,
                            cohort_dtype_t dtype, cohort_op_t op) {
  return COHORT_RUN("cohort_scan", kScan, sendbuf, recvbuf, count, dtype, op, 0);
}

cohort_status_t cohort_exscan(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                              size_t count, cohort_dtype_t dtype, cohort_op_t op) {
  return COHORT_RUN("cohort_exscan", kExscan, sendbuf, recvbuf, count, dtype, op, 0);
}

COHORT_TEAM_QUERY(cohort_team_init_report, cohort_init_report_t, report, t.report)

cohort_status_t cohort_team_init_report_format(cohort_team_t handle, char *buf, size_t len) {
  return cohort::read_team("cohort_team_init_report_format", handle, buf != nullptr && len > 0,
                           "buf is NULL or len is 0", [&](const cohort::TeamInfo &t) {
                             std::string text = cohort::format_init_report(t.report, t.size);
                             std::strncpy(buf, text.c_str(), len - 1);
                             buf[len - 1] = '\0';
                             return COHORT_SUCCESS;
                           });
}

}  // extern "C"

cohort_status_t cohort_allreduce_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                      size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                      cohort_request_t *request) {
  return COHORT_POSTED("cohort_allreduce_post", kAllreduce, sendbuf, recvbuf, count, dtype, op, 0);
}

cohort_status_t cohort_reduce_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                   size_t count, cohort_dtype_t dtype, cohort_op_t op, int root,
                                   cohort_request_t *request) {
  return COHORT_POSTED("cohort_reduce_post", kReduce, sendbuf, recvbuf, count, dtype, op, root);
}

cohort_status_t cohort_broadcast_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                      size_t count, cohort_dtype_t dtype, int root,
                                      cohort_request_t *request) {
  return COHORT_POSTED("cohort_broadcast_post", kBroadcast, sendbuf, recvbuf, count, dtype,
                       COHORT_SUM, root);
}

cohort_status_t cohort_allgather_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                      size_t sendcount, cohort_dtype_t dtype,
                                      cohort_request_t *request) {
  return COHORT_POSTED("cohort_allgather_post", kAllgather, sendbuf, recvbuf, sendcount, dtype,
                       COHORT_SUM, 0);
}

cohort_status_t cohort_reduce_scatter_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                           size_t recvcount, cohort_dtype_t dtype, cohort_op_t op,
                                           cohort_request_t *request) {
  return COHORT_POSTED("cohort_reduce_scatter_post", kReduceScatter, sendbuf, recvbuf, recvcount,
                       dtype, op, 0);
}

cohort_status_t cohort_alltoall_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                     size_t count, cohort_dtype_t dtype,
                                     cohort_request_t *request) {
  return COHORT_POSTED("cohort_alltoall_post", kAlltoall, sendbuf, recvbuf, count, dtype,
                       COHORT_SUM, 0);
}

cohort_status_t cohort_barrier_post(cohort_team_t handle, cohort_request_t *request) {
  return COHORT_POSTED("cohort_barrier_post", kBarrier, nullptr, nullptr, 0, COHORT_INT8,
                       COHORT_SUM, 0);
}

cohort_status_t cohort_gather_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                   size_t sendcount, cohort_dtype_t dtype, int root,
                                   cohort_request_t *request) {
  return COHORT_POSTED("cohort_gather_post", kGather, sendbuf, recvbuf, sendcount, dtype,
                       COHORT_SUM, root);
}

cohort_status_t cohort_scatter_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                    size_t recvcount, cohort_dtype_t dtype, int root,
                                    cohort_request_t *request) {
  return COHORT_POSTED("cohort_scatter_post", kScatter, sendbuf, recvbuf, recvcount, dtype,
                       COHORT_SUM, root);
}

cohort_status_t cohort_scan_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                 size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                 cohort_request_t *request) {
  return COHORT_POSTED("cohort_scan_post", kScan, sendbuf, recvbuf, count, dtype, op, 0);
}

cohort_status_t cohort_exscan_post(cohort_team_t handle, const void *sendbuf, void *recvbuf,
                                   size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                   cohort_request_t *request) {
  return COHORT_POSTED("cohort_exscan_post", kExscan, sendbuf, recvbuf, count, dtype, op, 0);
}

cohort_status_t cohort_request_test(cohort_request_t handle) {
  return cohort::on_request("cohort_request_test", handle, &cohort::CollFront::test);
}

cohort_status_t cohort_request_wait(cohort_request_t handle) {
  return cohort::on_request("cohort_request_wait", handle, &cohort::CollFront::wait);
}

cohort_status_t cohort_request_free(cohort_request_t handle) {
  return cohort::guarded("cohort_request_free", [&]() -> cohort_status_t {
    // An unfinished request still runs as its team progresses.
    return cohort::requests().remove(handle);
  });
}

cohort_status_t cohort_mem_register(cohort_team_t handle, void *buffer, size_t bytes,
                                    cohort_mem_reg_t *out) {
  return cohort::guarded("cohort_mem_register", [&]() -> cohort_status_t {
    if (out == nullptr) {
      return cohort::fail(COHORT_ERR_INVALID_ARG, "cohort_mem_register: reg (output) is NULL");
    }
    auto reg = std::make_shared<cohort::MemRegistration>();
    std::shared_ptr<cohort::TeamImpl> team;
    cohort::Status s = cohort::ready_team(handle, &team);
    if (!cohort::is_error(s)) s = team->colls().register_buffer(buffer, bytes, &reg->slot);
    if (cohort::is_error(s)) return s;
    reg->team = team;
    *out = cohort::registrations().add(std::move(reg));
    return COHORT_SUCCESS;
  });
}

cohort_status_t cohort_mem_deregister(cohort_team_t handle, cohort_mem_reg_t reg) {
  return cohort::guarded("cohort_mem_deregister", [&]() -> cohort_status_t {
    std::shared_ptr<cohort::TeamImpl> team;
    std::shared_ptr<cohort::MemRegistration> found;
    cohort::Status s = cohort::ready_team(handle, &team);
    if (!cohort::is_error(s)) s = cohort::registrations().find(reg, &found);
    if (cohort::is_error(s)) return s;
    if (found->team.lock() != team) {
      return cohort::fail(COHORT_ERR_INVALID_ARG,
                          "cohort_mem_deregister: the registration belongs to another team");
    }
    s = team->colls().deregister_buffer(found->slot);
    return cohort::is_error(s) ? s : cohort::registrations().remove(reg);
  });
}

cohort_status_t cohort_mem_cache_note(cohort_team_t handle, const void *buffer, size_t bytes,
                                      int *registered) {
  return cohort::guarded("cohort_mem_cache_note", [&]() -> cohort_status_t {
    if (registered == nullptr) {
      return cohort::fail(COHORT_ERR_INVALID_ARG, "cohort_mem_cache_note: registered is NULL");
    }
    *registered = 0;
    std::shared_ptr<cohort::TeamImpl> team;
    cohort::Status s = cohort::ready_team(handle, &team);
    if (!cohort::is_error(s)) *registered = team->colls().note_cached(buffer, bytes) ? 1 : 0;
    return s;
  });
}

cohort_status_t cohort_mem_cache_wanted(cohort_team_t handle, int *wanted) {
  return cohort::guarded("cohort_mem_cache_wanted", [&]() -> cohort_status_t {
    if (wanted == nullptr) {
      return cohort::fail(COHORT_ERR_INVALID_ARG, "cohort_mem_cache_wanted: wanted is NULL");
    }
    *wanted = 0;
    std::shared_ptr<cohort::TeamImpl> team;
    cohort::Status s = cohort::ready_team(handle, &team);
    if (!cohort::is_error(s)) *wanted = team->colls().cache_wanted() ? 1 : 0;
    return s;
  });
}

cohort_status_t cohort_mem_cache_sync(cohort_team_t handle) {
  return cohort::guarded("cohort_mem_cache_sync", [&]() -> cohort_status_t {
    std::shared_ptr<cohort::TeamImpl> team;
    cohort::Status s = cohort::ready_team(handle, &team);
    return cohort::is_error(s) ? s : team->colls().sync_cache();
  });
}

cohort_status_t cohort_send(cohort_team_t handle, const void *buf, size_t count,
                            cohort_dtype_t dtype, int peer) {
  return cohort::p2p("cohort_send", handle,
                     cohort::P2POp{true, const_cast<void *>(buf), count, dtype, peer});
}

cohort_status_t cohort_recv(cohort_team_t handle, void *buf, size_t count, cohort_dtype_t dtype,
                            int peer) {
  return cohort::p2p("cohort_recv", handle, cohort::P2POp{false, buf, count, dtype, peer});
}

cohort_status_t cohort_send_stream(cohort_team_t handle, const void *buf, size_t count,
                                   cohort_dtype_t dtype, int peer, void *stream) {
  return cohort::p2p(
      "cohort_send_stream", handle,
      cohort::P2POp{true, const_cast<void *>(buf), count, dtype, peer, true, stream});
}

cohort_status_t cohort_recv_stream(cohort_team_t handle, void *buf, size_t count,
                                   cohort_dtype_t dtype, int peer, void *stream) {
  return cohort::p2p("cohort_recv_stream", handle,
                     cohort::P2POp{false, buf, count, dtype, peer, true, stream});
}

cohort_status_t cohort_group_start(void) {
  ++cohort::t_group.depth;
  return COHORT_SUCCESS;
}

cohort_status_t cohort_group_end(void) {
  return cohort::guarded("cohort_group_end", [&]() -> cohort_status_t {
    cohort::GroupState &g = cohort::t_group;
    if (g.depth == 0) {
      return cohort::fail(COHORT_ERR_INVALID_USAGE,
                          "cohort_group_end without a matching cohort_group_start");
    }
    if (--g.depth > 0) return COHORT_SUCCESS;
    std::vector<cohort::GroupOp> ops = std::move(g.ops);
    g.ops.clear();
    cohort::Status error = g.error;
    std::string text = std::move(g.error_text);
    g.error = COHORT_SUCCESS;
    if (cohort::is_error(error)) {
      return cohort::failf(error,
                           "cohort_group_end: the group ran nothing: an operation in it "
                           "failed its check: %s",
                           text.c_str());
    }
    return cohort::run_group(std::move(ops));
  });
}
