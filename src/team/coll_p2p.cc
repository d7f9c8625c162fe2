// Send/recv groups on a team: the operations become one request whose schedule holds them
// all (coll/p2p.h).  Spans are bytes of the caller's buffers; sends to self are paired in
// order with receives from self and become local copies.  Groups on device memory or on a
// stream run the same schedule on host memory (coll_p2p_staged.cc).
#include <algorithm>
#include <string>

#include "coll/dtype.h"
#include "coll/p2p.h"
#include "coll/steps.h"
#include "core/cuda_driver.h"
#include "team/coll_front.h"

namespace cohort {

Status CollFront::check_p2p(P2POp *op) const {
  const char *what = op->send ? (op->on_stream ? "cohort_send_stream" : "cohort_send")
                              : (op->on_stream ? "cohort_recv_stream" : "cohort_recv");
  Status s = usable_for(what);
  if (is_error(s)) return s;
  if (is_error(coll::check_dtype(op->dtype))) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: %s", what, last_error().c_str());
  }
  if (op->peer < 0 || op->peer >= info_.size) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: peer=%d is outside the team (size %d)", what,
                 op->peer, info_.size);
  }
  if (s = check_count(what, op->count, coll::dtype_size(op->dtype), 1); is_error(s)) return s;
  if (op->count > 0 && op->buf == nullptr) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: buffer is NULL with count %zu", what, op->count);
  }
  // An empty message's pointer may lie just past its allocation: nothing to check.
  if (op->buf == nullptr || op->count == 0) return COHORT_SUCCESS;
  const BufferPlace place = place_of_recent(op->buf);
  op->device = !host_accessible(place.kind);
  if (op->on_stream) {
    s = check_stream_buffer(what, "the buffer", place, op->send ? "cohort_send" : "cohort_recv");
    if (is_error(s)) return s;
  }
  return check_on_team_gpu(what, "the buffer", place, info_.peers[info_.rank].cuda_device);
}

namespace {

// One team's operations of a group: all blocking or all stream-ordered; the streams of the
// latter in order of first use.
Status group_route(const TeamInfo &info, const std::vector<P2POp> &ops, bool *on_stream,
                   bool *device, std::vector<void *> *streams) {
  *on_stream = !ops.empty() && ops.front().on_stream;
  *device = false;
  for (const P2POp &op : ops) {
    *device = *device || op.device;
    if (op.on_stream != *on_stream) {
      return failf(COHORT_ERR_INVALID_USAGE,
                   "send/recv group on team '%s': it mixes stream-ordered operations "
                   "(cohort_send_stream / cohort_recv_stream) with blocking ones; one team's "
                   "operations in a group must be all of one kind",
                   info.name.c_str());
    }
    if (op.on_stream && std::find(streams->begin(), streams->end(), op.stream) == streams->end()) {
      streams->push_back(op.stream);
    }
  }
  return COHORT_SUCCESS;
}

}  // namespace

// The operations were checked one by one (check_p2p) when they were called.
Status CollFront::post_p2p(const std::vector<P2POp> &ops, std::shared_ptr<CollRequest> *out) {
  out->reset();
  Status s = usable_for("send/recv group");
  bool on_stream = false, device = false;
  std::vector<void *> streams;
  if (!is_error(s)) s = group_route(info_, ops, &on_stream, &device, &streams);
  if (is_error(s)) return s;
  if (on_stream || device) return post_p2p_staged(ops, streams, out);
  auto request = std::make_shared<CollRequest>();
  s = build_p2p(ops, request.get());
  if (is_error(s)) return s;
  push(request);
  *out = std::move(request);
  return COHORT_SUCCESS;
}

// The group's schedule on the operations' buffers.
Status CollFront::build_p2p(const std::vector<P2POp> &ops, CollRequest *request) const {
  request->reset("send/recv group");
  request->buffers = {};
  std::vector<coll::Action> actions;
  std::vector<int> self_sends;  // user-buffer indices of sends to self, in order
  size_t self_recvs = 0, bytes = 0;
  for (const P2POp &op : ops) {
    const size_t n = op.count * coll::dtype_size(op.dtype);
    const auto user = static_cast<uint32_t>(request->buffers.user.size());
    request->buffers.user.push_back(op.buf);
    coll::Span span{coll::Buffer::kUser, 0, n, user};
    bytes += n;
    if (op.peer != info_.rank) {
      op.send ? coll::send(&actions, op.peer, span) : coll::recv(&actions, op.peer, span);
    } else if (op.send) {
      self_sends.push_back(static_cast<int>(user));
    } else if (self_recvs >= self_sends.size()) {
      return failf(COHORT_ERR_INVALID_USAGE,
                   "send/recv group on team '%s': a receive from self (rank %d) comes before "
                   "its send to self; post the send first",
                   info_.name.c_str(), info_.rank);
    } else {
      const coll::Span from{coll::Buffer::kUser, 0, n,
                            static_cast<uint32_t>(self_sends[self_recvs++])};
      const size_t sent = ops[from.user].count * coll::dtype_size(ops[from.user].dtype);
      if (sent != n) {
        return failf(COHORT_ERR_INVALID_ARG,
                     "send/recv group on team '%s': a send to self of %zu bytes is received as "
                     "%zu bytes",
                     info_.name.c_str(), sent, n);
      }
      coll::copy(&actions, span, from);
    }
  }
  if (self_recvs != self_sends.size()) {
    return failf(COHORT_ERR_INVALID_USAGE,
                 "send/recv group on team '%s': %zu sends to self but %zu receives from self",
                 info_.name.c_str(), self_sends.size(), self_recvs);
  }
  coll::CollArgs args;
  args.collective = coll::Collective::kBarrier;  // not a collective: only the actions matter
  args.count = bytes;
  args.rank = info_.rank;
  args.size = info_.size;
  args.elem_size = 1;
  request->algorithm = coll::make_p2p_group(args, std::move(actions));
  request->dtype = COHORT_UINT8;
  return COHORT_SUCCESS;
}

}  // namespace cohort
