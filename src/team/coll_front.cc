// Host collectives on a team: prepare (check, select, queue), then polls of the queue, each
// under the transports' locks, until the request is done, or fails naming the ranks it waits
// for, the transport that broke, or the peer that aborted.
#include "team/coll_front.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "coll/dtype.h"
#include "coll/multi_channel.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"
#include "team/staged_replay.h"
#include "team/rank_list.h"
#include "coll/host_execution.h"

namespace cohort {

Status CollFront::configure() {
  Status s = coll::Selection::from_environment(&selection_, &selection_text_);
  if (!is_error(s)) s = param_double("COLL_TIMEOUT", &timeout_s_);
  int64_t chunk = 0;
  if (!is_error(s)) s = param_int("STAGED_CHUNK_BYTES", &chunk);
  int64_t kernel_bytes = 0;
  if (!is_error(s)) s = param_int("STAGED_KERNEL_BYTES", &kernel_bytes);
  int64_t lines_bytes = 0;
  if (!is_error(s)) s = param_int("STAGED_LINES_BYTES", &lines_bytes);
  if (is_error(s)) return s;
  chunk_bytes_ = static_cast<size_t>(chunk);
  kernel_bytes_ = static_cast<size_t>(kernel_bytes);
  lines_bytes_ = static_cast<size_t>(lines_bytes);
  // A message from a peer of this host takes well under a microsecond: poll that long before
  // yielding, unless ranks share cores (then spinning only delays the peer that must run).
  cpu_set_t cpus;
  int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const int local_size = info_.layout.local_size[info_.rank];
  spins_ = local_size <= std::max(cores, online > 0 ? online : 1) ? 64 : 0;
  return COHORT_SUCCESS;
}

std::string CollFront::settings() const {
  return selection_text_ + " COHORT_STAGED_CHUNK_BYTES=" + std::to_string(chunk_bytes_);
}

Status CollFront::run(const CollCall &call) {
  coll::CollArgs args;
  const coll::SelectRule *rule = nullptr;
  Status s = choose(call, &args, &rule);
  if (is_error(s) || rule == nullptr) return s;
  if (args.memory == COHORT_MEMORY_CUDA_DEVICE) return run_on_device(call, *rule, nullptr, true);
  // A blocking call reuses the last one's request (and the memory its execution grew) when
  // nothing else holds it.
  if (!spare_ || spare_.use_count() > 1) spare_ = std::make_shared<CollRequest>();
  queue(call, args, *rule, spare_);
  return wait(spare_);
}

Status CollFront::post(const CollCall &call, std::shared_ptr<CollRequest> *out) {
  coll::CollArgs args;
  const coll::SelectRule *rule = nullptr;
  Status s = choose(call, &args, &rule);
  if (is_error(s)) return s;
  auto request = std::make_shared<CollRequest>();
  request->reset(coll::collective_name(call.collective));
  if (rule == nullptr) {
    request->end(COHORT_SUCCESS);
  } else if (args.memory == COHORT_MEMORY_CUDA_DEVICE) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "%s_post on GPU device memory: posted collectives take host memory; enqueue "
                 "device buffers on a stream with cohort_%s_stream",
                 coll::collective_name(call.collective), coll::collective_name(call.collective));
  } else {
    queue(call, args, *rule, request);
  }
  *out = std::move(request);
  return COHORT_SUCCESS;
}

Status CollFront::enqueue(const CollCall &call, void *stream) {
  coll::CollArgs args;
  const coll::SelectRule *rule = nullptr;
  CollCall ordered = call;
  ordered.stream_ordered = true;  // check(): device memory only
  Status s = choose(ordered, &args, &rule);
  if (is_error(s) || rule == nullptr) return s;
  // A barrier has no buffers: on a stream it is the GPU's.
  if (call.collective == coll::Collective::kBarrier) {
    rule = selection_.choose(call.collective, COHORT_MEMORY_CUDA_DEVICE, 0, info_.size,
                             info_.layout.node_count);
    if (rule == nullptr) {
      return failf(COHORT_ERR_NOT_SUPPORTED,
                   "barrier_stream: no GPU algorithm for a barrier in the selection table");
    }
  }
  return run_on_device(call, *rule, stream, false);
}

// No earlier collective failed (its channels would hold part of that exchange) and no rank
// aborted the team.
Status CollFront::usable_for(const char *what) const {
  // Without the queue's lock, which the progress engine takes at every poll: a stream call
  // asks this for each piece.
  if (!has_stop_reason_.load(std::memory_order_acquire)) return COHORT_SUCCESS;
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_status_ == COHORT_ERR_ABORTED) {
    return failf(COHORT_ERR_ABORTED, "%s: team '%s' was aborted: %s", what, info_.name.c_str(),
                 stop_reason_.c_str());
  }
  return failf(COHORT_ERR_INVALID_USAGE,
               "%s: team '%s' cannot run collectives after an earlier one failed (its channels "
               "hold an unfinished exchange): %s. Destroy the team",
               what, info_.name.c_str(), stop_reason_.c_str());
}

// Checks the call and picks its rule: null when there is nothing to move (every rank passed
// count 0, so none waits for another).
Status CollFront::choose(const CollCall &call, coll::CollArgs *args,
                         const coll::SelectRule **rule) const {
  const char *name = coll::collective_name(call.collective);
  Status s = usable_for(name);
  if (is_error(s)) return s;
  if (s = check(call, args); is_error(s)) return s;
  *rule = nullptr;
  // A v-variant's rank cannot tell whether the others move anything.
  if (call.count == 0 && call.collective != coll::Collective::kBarrier &&
      !coll::is_vcollective(call.collective)) {
    return COHORT_SUCCESS;
  }
  const size_t bytes = args->count * args->elem_size;
  *rule =
      selection_.choose(call.collective, args->memory, bytes, info_.size, info_.layout.node_count);
  if (*rule != nullptr) {
    COHORT_LOG_TRACE(COLL, "%s: %s of %zu bytes on %s memory: %s on %d channel(s), from %s",
                     info_.name.c_str(), name, bytes, cohort_memory_kind_name(args->memory),
                     (*rule)->algorithm->name, (*rule)->channels,
                     coll::rule_origin_name((*rule)->origin));
    return COHORT_SUCCESS;
  }
  if (args->memory == COHORT_MEMORY_CUDA_DEVICE) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "%s on GPU device memory: no algorithm in the selection table takes it (check "
                 "COHORT_COLL_ALGO; cohort_info --algorithms prints the table)",
                 name);
  }
  return failf(COHORT_ERR_NOT_SUPPORTED,
               "%s on %s memory: no algorithm in the selection table takes it (cohort_info "
               "--algorithms prints the table)",
               name, cohort_memory_kind_name(args->memory));
}

// Queues `request` for a checked host-memory call.
void CollFront::queue(const CollCall &call, const coll::CollArgs &args,
                      const coll::SelectRule &rule, const std::shared_ptr<CollRequest> &request) {
  CollRequest &r = *request;
  r.reset(coll::collective_name(call.collective));
  r.algorithm = coll::make_multi_channel(*rule.algorithm, args, rule.channels);
  r.buffers.src = call.src;
  r.buffers.dst = call.dst;
  r.buffers.scratch = nullptr;
  r.buffers.user.clear();
  r.dtype = call.dtype;
  push(request);
}

void CollFront::push(const std::shared_ptr<CollRequest> &request) {
  CollRequest &r = *request;
  if (r.gate) r.queued_ns = now_ns();
  // The progress engine takes the lock at every poll and holds it briefly: asleep in the
  // lock, this thread would wait for the kernel to wake it (tens of microseconds).
  Backoff backoff(kLockSpins);
  while (!mutex_.try_lock()) backoff.pause();
  std::lock_guard<std::mutex> lock(mutex_, std::adopt_lock);
  if (r.gate) ++staged_queued_;
  if (r.replayed) ++replayed_queued_;
  if (stopped_ || !stop_reason_.empty()) {  // stopped since the call was checked
    r.end(stop_reason_.empty() ? COHORT_ERR_ABORTED : stop_status_,
          strprintf("%s on team '%s' not run: %s", r.what, info_.name.c_str(),
                    stop_reason_.empty() ? "the team stopped" : stop_reason_.c_str()));
    ended(r);
    return;
  }
  queue_.push_back(request);
}

Status CollFront::test(const std::shared_ptr<CollRequest> &request) {
  if (request->status.load(std::memory_order_acquire) == COHORT_IN_PROGRESS) {
    progress_requests();
  }
  return request->outcome();
}

Status CollFront::wait(const std::shared_ptr<CollRequest> &request) {
  Backoff backoff(spins_);
  for (;;) {
    Status s = test(request);
    if (s != COHORT_IN_PROGRESS) return s;
    if (request->moved) backoff.reset();
    backoff.pause();
  }
}

// Polls the head of the queue once, and starts the next as each finishes; a gated head waits
// for its gate.  True when bytes moved or a request ended.
bool CollFront::progress_requests() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return false;  // stop() ended every request; the transports may be gone
  TransportSet::Lock serial(transports_);
  bool moved = false;
  while (!queue_.empty()) {
    if (!queue_.front()->started && queue_.front()->gate && !queue_.front()->gate->open() &&
        !promote_replay()) {
      return moved;
    }
    const std::shared_ptr<CollRequest> head = queue_.front();
    if (head->gate && head->opened_ns == 0) head->opened_ns = now_ns();
    advance(*head);
    moved = moved || head->moved;
    if (head->status == COHORT_IN_PROGRESS) return moved;
    moved = true;
    queue_.pop_front();
    ended(*head);
    if (is_error(head->status)) fail_queued(*head);
  }
  return moved;
}

// The head waits for its stream.  A graph's replay queues its pieces when the engine sees its
// stream ring the replay's doorbell, which may come after calls the host made later: a stream call
// enqueued behind the graph's launch is queued at once, and waits on its stream for the
// replay.  So the first replayed piece, once its gate opened, runs ahead of a head that is
// not one; those it passes keep their order, and so do the replays' pieces (a later piece's
// gate may open while an earlier one's is seen closed).  (Across unordered streams the ranks
// may see gates open in different orders, as NCCL's collectives on unordered streams may
// deadlock: the streams of one team's calls must be ordered alike on every rank.)
bool CollFront::promote_replay() {
  if (replayed_queued_ == 0 || queue_.front()->replayed) return false;
  auto first = std::find_if(queue_.begin() + 1, queue_.end(),
                            [](const std::shared_ptr<CollRequest> &r) { return r->replayed; });
  if (first == queue_.end() || !(*first)->gate->open()) return false;
  std::shared_ptr<CollRequest> ahead = std::move(*first);
  queue_.erase(first);
  queue_.push_front(std::move(ahead));
  return true;
}

bool CollFront::progress_staged(bool *moved) {
  const bool rang = has_captures() && hub_->poll();
  *moved = progress_requests() || rang;
  return staged_pending();
}

bool CollFront::has_captures() const { return hub_ && hub_->live_count.load() > 0; }

bool CollFront::staged_pending() const {
  return (staged_queued_.load() > 0 && !stopped_) || has_captures();
}

void CollFront::ended(CollRequest &r) {
  if (!r.gate) return;
  COHORT_LOG_TRACE(COLL,
                   "%s: staged %s ended at %lld us: its gate opened %.1f us after it was "
                   "queued, it ran %.1f us",
                   info_.name.c_str(), r.what, static_cast<long long>(now_ns() / 1000),
                   r.opened_ns ? (r.opened_ns - r.queued_ns) / 1e3 : -1.0,
                   r.opened_ns ? (now_ns() - r.opened_ns) / 1e3 : -1.0);
  r.gate->end(r.status);
  r.gate.reset();
  --staged_queued_;
  if (r.replayed) --replayed_queued_;
}

void CollFront::start(CollRequest &r) {
  r.started = true;
  r.scratch.resize(r.algorithm->scratch_count() * coll::dtype_size(r.dtype));
  r.buffers.scratch = r.scratch.data();
  if (!r.execution) r.execution = std::make_unique<coll::HostExecution>(transports_);
  r.execution->start(*r.algorithm, r.buffers, r.dtype);
}

void CollFront::advance(CollRequest &r) {
  if (!r.started) {
    start(r);
    if (take_notice(r)) return;  // a peer aborted (or failed) before this call
  }
  // UCX moves bytes only inside progress: a rendezvous send already handed over waits on
  // this rank's worker even while the schedule waits on a peer of this host.
  transports_.progress();
  Status s = r.draining ? COHORT_SUCCESS : r.execution->progress();
  r.moved = !r.draining && r.execution->moved();
  if (s == COHORT_SUCCESS) {
    // A collective's sends complete before it does: a rendezvous send needs this rank's
    // worker to answer the receiver, and this rank may not call Cohort again for long.
    r.draining = true;
    if (transports_.busy_sends().empty()) {
      r.end(COHORT_SUCCESS);
      return;
    }
  } else if (is_error(s)) {
    std::string why = last_error();
    // A peer that aborted closes its connections: say so instead.
    if (s == COHORT_ERR_SYSTEM ? await_notice(r) : take_notice(r)) return;
    r.end(s, strprintf("%s on team '%s' failed: %s", r.what, info_.name.c_str(), why.c_str()));
    return;
  }
  if (r.moved) {
    r.idle_polls = 0;
    r.idle_since_ns = 0;
    return;
  }
  idle(r);
}

// Nothing moved: now and then, ask for notices and check the timeout.
void CollFront::idle(CollRequest &r) {
  if (++r.idle_polls % kIdlePollsPerClockRead != 0 || take_notice(r)) return;
  const int64_t now = now_ns();
  if (r.idle_since_ns == 0) r.idle_since_ns = now;
  if (now - r.idle_since_ns > static_cast<int64_t>(timeout_s_ * 1e9)) {
    const Status s = coll_timeout(r);
    r.end(s, last_error());
  }
}

// A peer's notice (it aborted the team, or a collective failed there) ends this request.  It
// is passed on once to every peer this rank reaches: its sender may not reach them all (the
// endpoint that broke, or a peer only this host reaches).
bool CollFront::take_notice(CollRequest &r) {
  tl::Notice notice;
  if (!transports_.poll_notice(&notice)) return false;
  transports_.announce(notice);
  const bool aborted = notice.status == COHORT_ERR_ABORTED;
  r.told = true;
  r.end(notice.status < 0 ? static_cast<Status>(notice.status) : COHORT_ERR_INTERNAL,
        strprintf("%s on team '%s' ended: %s %s: %s", r.what, info_.name.c_str(),
                  info_.describe(notice.rank).c_str(), aborted ? "aborted the team" : "failed",
                  notice.text().c_str()));
  return true;
}

// A peer that aborts releases its transports at once: a channel to it may break (a transport's
// failure, COHORT_ERR_SYSTEM) before its notice arrives, which other ranks pass on (a rank has
// channels to the peers its plan links it to, not to every rank).  A broken channel waits a
// moment for a notice that says why; other failures do not wait.
bool CollFront::await_notice(CollRequest &r) {
  const int64_t deadline = deadline_after(kNoticeGraceSeconds);
  Backoff backoff;
  while (!take_notice(r)) {
    if (now_ns() > deadline) return false;
    transports_.progress();
    backoff.pause();
  }
  return true;
}

Status CollFront::coll_timeout(const CollRequest &r) const {
  const coll::CollArgs &args = r.algorithm->args();
  std::vector<int> ranks = r.draining ? transports_.busy_sends() : r.execution->waiting_on();
  std::string at = r.draining ? "its sends after the last step" : r.execution->waiting();
  return failf(COHORT_ERR_TIMEOUT,
               "%s of %zu elements on team '%s' made no progress for %.3g s at %s: waiting for "
               "rank(s) %s (%s). Did every rank make this call, in the same order?",
               r.what, args.count, info_.name.c_str(), timeout_s_, at.c_str(),
               format_rank_list(ranks).c_str(),
               ranks.empty() ? "none" : info_.describe(ranks[0]).c_str());
}

// The channels now hold part of the failed exchange: what is queued behind it cannot run, and
// the team runs no more.  A failure found here is told to every peer, so that those waiting
// on this rank end at once instead of at their timeout.
void CollFront::fail_queued(const CollRequest &failed) {
  // The one warning of a failure: what broke (a peer, a connection, a timeout) is in its error.
  if (failed.status != COHORT_ERR_ABORTED) COHORT_LOG_WARN(COLL, "%s", failed.error.c_str());
  if (!failed.told) transports_.announce(tl::Notice::make(info_.rank, failed.status, failed.error));
  stop_status_ =
      failed.status == COHORT_ERR_ABORTED ? COHORT_ERR_ABORTED : COHORT_ERR_INVALID_USAGE;
  stop_reason_ = failed.error;
  has_stop_reason_.store(true, std::memory_order_release);
  for (const std::shared_ptr<CollRequest> &r : queue_) {
    r->end(stop_status_, strprintf("not run: an earlier collective on team '%s' failed: %s",
                                   info_.name.c_str(), failed.error.c_str()));
    ended(*r);
  }
  queue_.clear();
}

void CollFront::stop(Status status, const std::string &why, bool announce) {
  if (announce) {
    TransportSet::Lock serial(transports_);
    transports_.announce(tl::Notice::make(info_.rank, status, why));
  }
  stopped_ = true;
  std::lock_guard<std::mutex> lock(mutex_);  // no poll runs from here on
  if (stop_reason_.empty()) {
    stop_status_ = status;
    stop_reason_ = why;
    has_stop_reason_.store(true, std::memory_order_release);
  }
  for (const std::shared_ptr<CollRequest> &r : queue_) {
    r->end(status,
           strprintf("%s on team '%s' ended: %s", r->what, info_.name.c_str(), why.c_str()));
    ended(*r);
  }
  queue_.clear();
}

}  // namespace cohort
