// Send/recv groups on a team: the operations become one request whose schedule holds them
// all (coll/p2p.h).  Spans are bytes of the caller's buffers; sends to self are paired in
// order with receives from self and become local copies.
#include <string>

#include "coll/p2p.h"
#include "coll/steps.h"
#include "team/team.h"
#include "coll/dtype.h"

namespace cohort {

Status TeamImpl::check_p2p(const P2POp &op) const {
  const char *what = op.send ? "cohort_send" : "cohort_recv";
  Status s = usable_for(what);
  if (is_error(s)) return s;
  if (is_error(coll::check_dtype(op.dtype))) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: %s", what, last_error().c_str());
  }
  if (op.peer < 0 || op.peer >= size_) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: peer=%d is outside the team (size %d)", what, op.peer,
                 size_);
  }
  if (op.count > 0 && op.buf == nullptr) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: buffer is NULL with count %zu", what, op.count);
  }
  return check_host_memory(what, "buffer", op.buf);
}

// The operations were checked one by one (check_p2p) when they were called.
Status TeamImpl::post_p2p(const std::vector<P2POp> &ops, std::shared_ptr<CollRequest> *out) {
  Status s = usable_for("send/recv group");
  if (is_error(s)) return s;
  auto request = std::make_shared<CollRequest>();
  request->reset("send/recv group");
  std::vector<coll::Action> actions;
  std::vector<int> self_sends;  // user-buffer indices of sends to self, in order
  size_t self_recvs = 0, bytes = 0;
  for (const P2POp &op : ops) {
    const size_t n = op.count * coll::dtype_size(op.dtype);
    const auto user = static_cast<uint32_t>(request->buffers.user.size());
    request->buffers.user.push_back(op.buf);
    coll::Span span{coll::Buffer::kUser, 0, n, user};
    bytes += n;
    if (op.peer != rank_) {
      op.send ? coll::send(&actions, op.peer, span) : coll::recv(&actions, op.peer, span);
    } else if (op.send) {
      self_sends.push_back(static_cast<int>(user));
    } else if (self_recvs >= self_sends.size()) {
      return failf(COHORT_ERR_INVALID_USAGE,
                   "send/recv group on team '%s': a receive from self (rank %d) comes before "
                   "its send to self; post the send first",
                   config_.name.c_str(), rank_);
    } else {
      const coll::Span from{coll::Buffer::kUser, 0, n,
                            static_cast<uint32_t>(self_sends[self_recvs++])};
      const size_t sent = ops[from.user].count * coll::dtype_size(ops[from.user].dtype);
      if (sent != n) {
        return failf(COHORT_ERR_INVALID_ARG,
                     "send/recv group on team '%s': a send to self of %zu bytes is received as "
                     "%zu bytes",
                     config_.name.c_str(), sent, n);
      }
      coll::copy(&actions, span, from);
    }
  }
  if (self_recvs != self_sends.size()) {
    return failf(COHORT_ERR_INVALID_USAGE,
                 "send/recv group on team '%s': %zu sends to self but %zu receives from self",
                 config_.name.c_str(), self_sends.size(), self_recvs);
  }
  coll::CollArgs args;
  args.collective = coll::Collective::kBarrier;  // not a collective: only the actions matter
  args.count = bytes;
  args.rank = rank_;
  args.size = size_;
  args.elem_size = 1;
  request->algorithm = coll::make_p2p_group(args, std::move(actions));
  request->dtype = COHORT_UINT8;
  queue_.push_back(request);
  *out = std::move(request);
  return COHORT_SUCCESS;
}

}  // namespace cohort
