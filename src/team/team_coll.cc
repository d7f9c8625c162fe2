// Host-memory collectives on a team: check the call, pick the algorithm, run its schedule
// over the team's channels until done, or fail naming the ranks it waits for.
#include <algorithm>

#include "core/clock.h"
#include "core/memory_type.h"
#include "core/params.h"
#include "team/rank_list.h"
#include "team/team.h"
#include "tl_host/dtype.h"
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
      reduces(collective) ? tl_host::check_reduction(dtype, op) : tl_host::check_dtype(dtype);
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
  // Only a process that uses a GPU asks CUDA (the query needs the runtime up).
  if (peers_[rank_].cuda_device >= 0) {
    const void *buffers[2] = {needs_src ? src : nullptr, needs_dst ? dst : nullptr};
    for (int k = 0; k < 2; ++k) {
      if (buffers[k] == nullptr || memory_type(buffers[k]) != MemoryType::kDevice) continue;
      return failf(COHORT_ERR_NOT_SUPPORTED,
                   "%s: %s is GPU memory; collectives on device buffers are not built yet: pass "
                   "host (or managed) memory",
                   name, k == 0 ? "sendbuf" : "recvbuf");
    }
  }
  return COHORT_SUCCESS;
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
  Status s = check_ready();
  if (is_error(s)) return s;
  if (s = check_collective(collective, src, dst, count, dtype, op, root); is_error(s)) return s;
  // Nothing to move: every rank passed count 0 (matching arguments), so none waits for another.
  if (count == 0 && collective != coll::Collective::kBarrier) return COHORT_SUCCESS;
  const size_t elem = tl_host::dtype_size(dtype);
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
  const coll::AlgorithmInfo &info = selection_.choose(collective, count * elem, size_);
  std::unique_ptr<coll::Algorithm> algorithm = info.make(args);
  return run_schedule(*algorithm, src, dst, dtype);
}

Status TeamImpl::run_schedule(const coll::Algorithm &algorithm, const void *src, void *dst,
                              cohort_dtype_t dtype) {
  const size_t scratch_bytes = algorithm.scratch_count() * tl_host::dtype_size(dtype);
  if (scratch_.size() < scratch_bytes) scratch_.resize(scratch_bytes);
  const double timeout_s = coll_timeout_s_;
  Status s;
  tl_host::HostBuffers buffers{src, dst, scratch_.data()};
  tl_host::Execution execution(algorithm, buffers, dtype, peer_channels_);
  // UCX's worker is serialized: one thread at a time, for the whole collective.
  std::unique_lock<std::mutex> ucx_lock;
  if (ucx_worker_) ucx_lock = std::unique_lock<std::mutex>(ucx_worker_->mutex());
  Backoff backoff(spins_);
  int64_t last_progress = now_ns();
  for (;;) {
    // UCX moves bytes only inside progress: a rendezvous send already handed over waits on
    // this rank's worker even while the schedule waits on a peer of this host.
    if (ucx_worker_) ucx_worker_->progress();
    s = execution.progress();
    if (s == COHORT_SUCCESS && ucx_worker_) {
      return drain_ucx_sends(coll::collective_name(algorithm.args().collective));
    }
    if (s != COHORT_IN_PROGRESS) return s;
    if (execution.moved()) {
      backoff.reset();
      last_progress = now_ns();
    } else if (now_ns() - last_progress > static_cast<int64_t>(timeout_s * 1e9)) {
      std::vector<int> ranks = execution.waiting_on();
      return failf(COHORT_ERR_TIMEOUT,
                   "%s of %zu elements on team '%s' made no progress for %.3g s at %s: waiting "
                   "for rank(s) %s (%s). Did every rank make this call, in the same order?",
                   coll::collective_name(algorithm.args().collective), algorithm.args().count,
                   config_.name.c_str(), timeout_s, execution.waiting().c_str(),
                   format_rank_list(ranks).c_str(),
                   ranks.empty() ? "none" : describe(ranks[0]).c_str());
    }
    backoff.pause();
  }
}

}  // namespace cohort
