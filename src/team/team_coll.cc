// Host-memory collectives on a team: check the call, pick the algorithm, run its schedule
// over the team's channels until done, or fail naming the ranks it waits for.
#include <algorithm>

#include "core/clock.h"
#include "core/cuda_driver.h"
#include "core/params.h"
#include "team/rank_list.h"
#include "team/team.h"
#include "coll/dtype.h"
#include "tl_host/executor.h"

namespace cohort {
namespace {

bool reduces(coll::Collective c) {
  return c == coll::Collective::kAllreduce || c == coll::Collective::kReduce ||
         c == coll::Collective::kReduceScatter;
}

bool rooted(coll::Collective c) {
  return c == coll::Collective::kReduce || c == coll::Collective::kBroadcast;
}

}  // namespace

Status TeamImpl::check_collective(coll::Collective collective, const void *src, void *dst,
                                  size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                  int root) const {
  const char *name = coll::collective_name(collective);
  Status s =
      reduces(collective) ? coll::check_reduction(dtype, op) : coll::check_dtype(dtype);
  if (is_error(s)) return failf(s, "%s: %s", name, last_error().c_str());
  if (rooted(collective) && (root < 0 || root >= size_)) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: root=%d is outside the team (size %d)", name, root,
                 size_);
  }
  if (collective == coll::Collective::kBarrier || count == 0) return COHORT_SUCCESS;
  const bool needs_src = collective != coll::Collective::kBroadcast || root == rank_;
  const bool needs_dst = collective != coll::Collective::kReduce || root == rank_;
  if ((needs_src && src == nullptr) || (needs_dst && dst == nullptr)) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", name,
                 needs_src && src == nullptr ? "sendbuf" : "recvbuf", count);
  }
  s = check_host_memory(name, "sendbuf", needs_src ? src : nullptr);
  return is_error(s) ? s : check_host_memory(name, "recvbuf", needs_dst ? dst : nullptr);
}

Status TeamImpl::check_host_memory(const char *what, const char *which, const void *buf) const {
  // Only a process that uses a GPU asks CUDA (the query needs the runtime up).
  if (buf == nullptr || peers_[rank_].cuda_device < 0) return COHORT_SUCCESS;
  if (host_accessible(memory_kind_detector().kind_of(buf))) return COHORT_SUCCESS;
  return failf(COHORT_ERR_NOT_SUPPORTED,
               "%s: %s is GPU memory; collectives on device buffers are not built yet: pass host "
               "(or managed) memory",
               what, which);
}

// NCCL's in-place conventions: the same buffer, or for allgather / reduce-scatter the rank's
// block of the larger one.
bool TeamImpl::detect_in_place(coll::Collective collective, const void *src, const void *dst,
                               size_t count, size_t elem) const {
  const char *s = static_cast<const char *>(src);
  const char *d = static_cast<const char *>(dst);
  if (src == nullptr || dst == nullptr) return false;
  switch (collective) {
    case coll::Collective::kAllgather: return s == d + static_cast<size_t>(rank_) * count * elem;
    case coll::Collective::kReduceScatter:
      return d == s + static_cast<size_t>(rank_) * count * elem;
    default: return s == d;
  }
}

Status TeamImpl::collective(coll::Collective collective, const void *src, void *dst, size_t count,
                            cohort_dtype_t dtype, cohort_op_t op, int root) {
  // A blocking call reuses the last one's request (and the memory its execution grew) when
  // nothing else holds it.
  if (!spare_ || spare_.use_count() > 1) spare_ = std::make_shared<CollRequest>();
  Status s = prepare(collective, src, dst, count, dtype, op, root, spare_);
  if (is_error(s)) return s;
  return wait_request(spare_);
}

Status TeamImpl::post_collective(coll::Collective collective, const void *src, void *dst,
                                 size_t count, cohort_dtype_t dtype, cohort_op_t op, int root,
                                 std::shared_ptr<CollRequest> *out) {
  auto request = std::make_shared<CollRequest>();
  Status s = prepare(collective, src, dst, count, dtype, op, root, request);
  if (is_error(s)) return s;
  *out = std::move(request);
  return COHORT_SUCCESS;
}

// Ready, and no earlier collective failed (its channels would hold part of that exchange).
Status TeamImpl::usable_for(const char *what) const {
  Status s = check_ready();
  if (is_error(s)) return s;
  if (coll_error_.empty()) return COHORT_SUCCESS;
  return failf(COHORT_ERR_INVALID_USAGE,
               "%s: team '%s' cannot run collectives after an earlier one failed (its channels "
               "hold an unfinished exchange): %s. Destroy the team",
               what, config_.name.c_str(), coll_error_.c_str());
}

// Checks the call and queues `request` for it (or completes it at once when there is nothing
// to move: every rank passed count 0, so none waits for another).
Status TeamImpl::prepare(coll::Collective collective, const void *src, void *dst, size_t count,
                         cohort_dtype_t dtype, cohort_op_t op, int root,
                         const std::shared_ptr<CollRequest> &request) {
  Status s = usable_for(coll::collective_name(collective));
  if (is_error(s)) return s;
  if (s = check_collective(collective, src, dst, count, dtype, op, root); is_error(s)) return s;
  CollRequest &r = *request;
  r.reset(coll::collective_name(collective));
  if (count == 0 && collective != coll::Collective::kBarrier) {
    r.status = COHORT_SUCCESS;
    return COHORT_SUCCESS;
  }
  const size_t elem = coll::dtype_size(dtype);
  coll::CollArgs args;
  args.collective = collective;
  args.count = count;
  args.op = reduces(collective) ? op : COHORT_SUM;
  args.root = root;
  args.in_place = detect_in_place(collective, src, dst, count, elem);
  args.rank = rank_;
  args.size = size_;
  args.elem_size = elem;
  args.ring = &plan_.rings[0];
  args.ring_position = plan_.ring_position[0][rank_];
  args.node_of_rank = &layout_.node_of_rank;
  r.algorithm = selection_.choose(collective, count * elem, size_, layout_.node_count).make(args);
  r.buffers.src = src;
  r.buffers.dst = dst;
  r.buffers.scratch = nullptr;
  r.dtype = dtype;
  queue_.push_back(request);
  return COHORT_SUCCESS;
}

Status TeamImpl::test_request(const std::shared_ptr<CollRequest> &request) {
  if (request->status == COHORT_IN_PROGRESS) progress_requests();
  if (is_error(request->status)) return fail(request->status, request->error);
  return request->status;
}

Status TeamImpl::wait_request(const std::shared_ptr<CollRequest> &request) {
  Backoff backoff(spins_);
  for (;;) {
    Status s = test_request(request);
    if (s != COHORT_IN_PROGRESS) return s;
    if (request->moved) backoff.reset();
    backoff.pause();
  }
}

// Polls the head of the queue once, and starts the next as each finishes.
void TeamImpl::progress_requests() {
  // UCX's worker is serialized: one thread at a time.
  std::unique_lock<std::mutex> ucx_lock;
  if (ucx_worker_) ucx_lock = std::unique_lock<std::mutex>(ucx_worker_->mutex());
  while (!queue_.empty()) {
    CollRequest &head = *queue_.front();
    advance(head);
    if (head.status == COHORT_IN_PROGRESS) return;
    queue_.pop_front();
    if (is_error(head.status)) fail_queued(head);
  }
}

void TeamImpl::advance(CollRequest &r) {
  if (!r.started) {
    r.started = true;
    r.scratch.resize(r.algorithm->scratch_count() * coll::dtype_size(r.dtype));
    r.buffers.scratch = r.scratch.data();
    if (r.execution) {
      r.execution->restart(*r.algorithm, r.buffers, r.dtype);
    } else {
      r.execution =
          std::make_unique<tl_host::Execution>(*r.algorithm, r.buffers, r.dtype, peer_channels_);
    }
  }
  // UCX moves bytes only inside progress: a rendezvous send already handed over waits on
  // this rank's worker even while the schedule waits on a peer of this host.
  if (ucx_worker_) ucx_worker_->progress();
  Status s = r.draining ? COHORT_SUCCESS : r.execution->progress();
  r.moved = !r.draining && r.execution->moved();
  if (s == COHORT_SUCCESS) {
    // A collective's sends complete before it does: a rendezvous send needs this rank's
    // worker to answer the receiver, and this rank may not call Cohort again for long.
    r.draining = true;
    if (ucx_sends_done()) {
      r.status = COHORT_SUCCESS;
      return;
    }
  } else if (is_error(s)) {
    r.status = s;
    r.error = last_error();
    return;
  }
  if (r.moved) {
    r.idle_polls = 0;
    r.idle_since_ns = 0;
    return;
  }
  if (++r.idle_polls % kIdlePollsPerClockRead != 0) return;
  const int64_t now = now_ns();
  if (r.idle_since_ns == 0) r.idle_since_ns = now;
  if (now - r.idle_since_ns > static_cast<int64_t>(coll_timeout_s_ * 1e9)) {
    r.status = coll_timeout(r);
    r.error = last_error();
  }
}

Status TeamImpl::coll_timeout(const CollRequest &r) const {
  const coll::CollArgs &args = r.algorithm->args();
  std::vector<int> ranks = r.draining ? ucx_busy_ranks() : r.execution->waiting_on();
  std::string at = r.draining ? "its sends after the last step" : r.execution->waiting();
  return failf(COHORT_ERR_TIMEOUT,
               "%s of %zu elements on team '%s' made no progress for %.3g s at %s: waiting for "
               "rank(s) %s (%s). Did every rank make this call, in the same order?",
               r.what, args.count, config_.name.c_str(), coll_timeout_s_, at.c_str(),
               format_rank_list(ranks).c_str(),
               ranks.empty() ? "none" : describe(ranks[0]).c_str());
}

// The channels now hold part of the failed exchange: what is queued behind it cannot run.
void TeamImpl::fail_queued(const CollRequest &failed) {
  coll_error_ = failed.error;
  for (const std::shared_ptr<CollRequest> &r : queue_) {
    r->status = COHORT_ERR_INVALID_USAGE;
    r->error = strprintf("not run: an earlier collective on team '%s' failed: %s",
                         config_.name.c_str(), failed.error.c_str());
  }
  queue_.clear();
}

}  // namespace cohort
