// Send/recv groups on device memory, or on a stream, through host memory: one team's
// operations of a group become one request, the same schedule as on host memory (coll_p2p.cc)
// on page-locked staging memory, queued behind a gate like a staged collective's piece
// (coll_staged.cc).  The stream copies what the group sends into the staging memory, writes
// the group's piece number, waits for the queue to write it back, and copies what it received
// out.  A stream-ordered group returns once that is enqueued; a group on several streams runs on
// the first, after what the others hold, and the others wait for its end (NCCL's groups do
// the same); a blocking one (device buffers, no stream) enqueues it on the team's own stream
// and waits for the copies back (settle_p2p).  Each operation has its own place in the staging
// memory, so a group is one piece whatever its size: pieces cut from a group would need the peers
// to cut their groups alike, which groups of different shapes on two ranks (legal: messages match
// per peer) do not.  A group on one stream captured into a CUDA graph queues its request at
// each replay, like a captured collective (staged_replay.h).  A group on one stream whose every
// operation is to self is only copies on the stream (copy_self_group).
#include <algorithm>

#include "coll/dtype.h"
#include "core/clock.h"
#include "core/cuda_stream.h"
#include "core/log.h"
#include "team/coll_front.h"
#include "team/progress_engine.h"
#include "team/staged_plan.h"
#include "team/staged_replay.h"

namespace cohort {
namespace {

size_t op_bytes(const P2POp &op) { return op.count * coll::dtype_size(op.dtype); }

// Each operation's offset in the staging memory, and the bytes of all.
size_t layout(const std::vector<P2POp> &ops, std::vector<size_t> *offsets) {
  size_t bytes = 0;
  for (const P2POp &op : ops) {
    bytes = staged_aligned(bytes);
    offsets->push_back(bytes);
    bytes += op_bytes(op);
  }
  return bytes;
}

bool all_to_self(const std::vector<P2POp> &ops, int rank) {
  return std::all_of(ops.begin(), ops.end(), [&](const P2POp &op) { return op.peer == rank; });
}

}  // namespace

// A stream-ordered group whose every operation is this rank's own (nccl-tests' sendrecv at one
// rank, a self block): each receive is a copy from its send on the stream, no host memory.
Status CollFront::copy_self_group(const std::vector<P2POp> &ops, void *stream) {
  CollRequest probe;  // the same checks, and words, as any group's
  Status s = build_p2p(ops, &probe);
  std::vector<const P2POp *> sends;
  size_t matched = 0;
  for (const P2POp &op : ops) {
    if (is_error(s)) break;
    if (op.send) {
      sends.push_back(&op);
      continue;
    }
    s = cuda::copy_async(op.buf, sends[matched++]->buf, op_bytes(op), stream,
                         "copying a send to self into its receive");
  }
  return s;
}

Status CollFront::post_p2p_staged(const std::vector<P2POp> &ops, const std::vector<void *> &streams,
                                  std::shared_ptr<CollRequest> *out) {
  const bool blocking = streams.empty();
  void *stream = blocking ? nullptr : streams.front();
  if (streams.size() == 1 && all_to_self(ops, info_.rank)) return copy_self_group(ops, stream);
  const std::vector<void *> others(streams.begin() + (blocking ? 0 : 1), streams.end());
  bool capturing = false;  // a group on several streams is refused in a capture
  Status s = stage_on("send/recv group", &stream, blocking, others.empty() ? &capturing : nullptr);
  for (void *other : others) {  // each must not be capturing either
    if (!is_error(s)) s = stage_on("send/recv group", &other, false, nullptr);
  }
  std::vector<size_t> offsets;
  const size_t bytes = layout(ops, &offsets);
  if (!is_error(s) && capturing) return capture_p2p(ops, offsets, bytes, stream);
  if (!is_error(s)) s = staging_->reserve(std::max<size_t>(1, bytes));
  if (is_error(s)) return s;
  std::vector<P2POp> staged = ops;
  for (size_t i = 0; i < staged.size(); ++i) staged[i].buf = staging_->memory() + offsets[i];
  auto request = std::make_shared<CollRequest>();
  s = build_p2p(staged, request.get());  // a refused group leaves nothing behind
  if (is_error(s)) return s;
  const uint32_t piece = staging_->claim(1) + 1;
  request->gate = staging_->gate(piece);
  request->copies_back = blocking;
  push(request);
  ProgressEngine::instance().watch(this);
  s = staging_->join(stream, others);
  if (!is_error(s)) s = staging_->order(stream);
  if (!is_error(s)) s = enqueue_p2p_copies(ops, staged, staging_->site(), piece, stream);
  if (!is_error(s)) s = staging_->finished(stream);
  if (!is_error(s)) s = staging_->rejoin(stream, others);
  if (is_error(s)) return abandon_queued(s);
  if (blocking) *out = std::move(request);
  return COHORT_SUCCESS;
}

// The sends' bytes in, the piece's number into ready, its number back waited for, the
// receives' bytes out.
Status CollFront::enqueue_p2p_copies(const std::vector<P2POp> &ops,
                                     const std::vector<P2POp> &staged, const StageSite &site,
                                     uint32_t piece, void *stream) {
  Status s = COHORT_SUCCESS;
  for (size_t i = 0; i < ops.size() && !is_error(s); ++i) {
    if (ops[i].send) {  // a send to self too: its receive copies it within the staging
      s = cuda::copy_async(staged[i].buf, ops[i].buf, op_bytes(ops[i]), stream,
                           "copying a send's bytes into host memory");
    }
  }
  if (!is_error(s)) s = cuda::write_word(site.ready, piece, stream, "announcing a group");
  if (!is_error(s)) {
    s = cuda::wait_word(site.done, piece, stream, "waiting for a send/recv group");
  }
  for (size_t i = 0; i < ops.size() && !is_error(s); ++i) {
    if (!ops[i].send) {
      s = cuda::copy_async(ops[i].buf, staged[i].buf, op_bytes(ops[i]), stream,
                           "copying a receive's bytes back to device memory");
    }
  }
  return s;
}

// A group on one stream captured into a CUDA graph: on the capture's own memory, queued by
// the progress engine when its doorbell rings at each replay (staged_replay.h).  Its schedule is
// built here once, so that a group Cohort refuses is refused now, and again at each replay.
Status CollFront::capture_p2p(const std::vector<P2POp> &ops, const std::vector<size_t> &offsets,
                              size_t bytes, void *stream) {
  std::unique_ptr<StagedReplay> owned;
  Status s = StagedReplay::create(replay_hub(), "send/recv group", bytes, &owned);
  if (is_error(s)) return s;
  std::vector<P2POp> staged = ops;
  for (size_t i = 0; i < staged.size(); ++i) staged[i].buf = owned->site().memory + offsets[i];
  CollRequest probe;
  s = build_p2p(staged, &probe);
  if (is_error(s)) return s;
  owned->set_group(staged);
  StagedReplay *replay = owned.get();
  s = capture_ring(std::move(owned), stream);
  if (!is_error(s)) s = enqueue_p2p_copies(ops, staged, replay->site(), 1, stream);
  if (is_error(s)) {
    return failf(s,
                 "send/recv group on GPU device memory through host memory (team '%s'), "
                 "captured into a CUDA graph: %s",
                 info_.name.c_str(), last_error().c_str());
  }
  COHORT_LOG_INFO(COLL, "%s: a send/recv group of %zu operation(s) captured into a CUDA graph",
                  info_.name.c_str(), ops.size());
  return COHORT_SUCCESS;
}

Status CollFront::settle_p2p(const std::shared_ptr<CollRequest> &request) {
  Status ended = COHORT_SUCCESS;
  if (request->copies_back) {
    void *stream = nullptr;
    ended = staging_->own_stream(&stream);
    if (!is_error(ended)) ended = drain_stream(stream, "a send/recv group through host memory");
  }
  const Status s = request->outcome();
  return is_error(s) ? s : ended;
}

}  // namespace cohort
