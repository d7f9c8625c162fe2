#include "coll/host_execution.h"

#include <algorithm>
#include <cstring>

#include "coll/dtype.h"
#include "coll/host_reduce.h"

namespace cohort::coll {

size_t wire_bytes(size_t payload) {
  size_t padded = (payload + coll::kChannelAlign - 1) / coll::kChannelAlign * coll::kChannelAlign;
  return std::max(padded, coll::kChannelAlign);
}

void HostExecution::start(const coll::Algorithm &algorithm, const Buffers &buffers,
                          cohort_dtype_t dtype) {
  algorithm_ = &algorithm;
  buffers_ = buffers;
  dtype_ = dtype;
  elem_ = coll::dtype_size(dtype);
  step_ = -1;
  actions_.clear();
  transfers_.clear();
  moved_ = false;
}

char *HostExecution::address(const coll::Span &span) const {
  const void *base = span.buffer == coll::Buffer::kSrc    ? buffers_.src
                     : span.buffer == coll::Buffer::kDst  ? buffers_.dst
                     : span.buffer == coll::Buffer::kUser ? buffers_.user[span.user]
                                                          : buffers_.scratch;
  return const_cast<char *>(static_cast<const char *>(base)) + span.offset * elem_;
}

// The thresholds of the channel to (or from) `peer` at which a message goes by reference
// (single copy) or direct; 0: never.
HostExecution::Thresholds HostExecution::thresholds(int peer, bool sending) const {
  const PeerChannels c = peers_.channels(peer);
  if (sending) return c.to ? Thresholds{c.to->reference_min(), c.to->direct_min()} : Thresholds{};
  return c.from ? Thresholds{c.from->reference_min(), c.from->direct_min()} : Thresholds{};
}

void HostExecution::start_step() {
  algorithm_->step(step_, &actions_);
  transfers_.clear();
  for (const coll::Action &a : actions_) {
    const bool sending = a.verb == coll::Verb::kSend;
    if (!sending && a.verb != coll::Verb::kRecv && a.verb != coll::Verb::kRecvReduce) continue;
    Pending p;
    p.action = a;
    p.total = (sending ? a.src.count : a.dst.count) * elem_;
    p.wire = wire_bytes(p.total);
    // Both ends see the same size and the same thresholds: they agree without asking.
    const auto [min, direct] = thresholds(a.peer, sending);
    if (min > 0 && p.total >= min) {
      p.by_reference = true;
      p.wire = sizeof(coll::Reference);
      if (sending) {
        p.reference = coll::Reference{reinterpret_cast<uint64_t>(address(a.src)), p.total};
      }
    } else if (direct > 0 && p.total >= direct) {
      p.direct = true;
    }
    transfers_.push_back(p);
  }
}

Status HostExecution::progress() {
  moved_ = false;
  if (step_ < 0) {
    step_ = 0;
    if (algorithm_->num_steps() > 0) start_step();
  }
  while (step_ < algorithm_->num_steps()) {
    // Transfers to or from one peer go in listed order: only the first unfinished one moves.
    busy_to_.clear();
    busy_from_.clear();
    bool all_done = true;
    for (Pending &p : transfers_) {
      if (p.complete) continue;
      all_done = false;
      const int peer = p.action.peer;
      const bool sending = p.action.verb == coll::Verb::kSend;
      std::vector<int> &busy = sending ? busy_to_ : busy_from_;
      if (std::find(busy.begin(), busy.end(), peer) != busy.end()) continue;
      busy.push_back(peer);
      Status s = sending ? advance_send(&p) : advance_recv(&p);
      if (is_error(s)) return s;
    }
    if (!all_done) {
      bool now_done = std::all_of(transfers_.begin(), transfers_.end(),
                                  [](const Pending &p) { return p.complete; });
      if (!now_done) return COHORT_IN_PROGRESS;
    }
    run_local_actions();
    moved_ = true;
    if (++step_ < algorithm_->num_steps()) start_step();
  }
  return COHORT_SUCCESS;
}

Status HostExecution::advance_send(Pending *p) {
  const int peer = p->action.peer;
  SendChannel *to = peers_.channels(peer).to;
  if (to == nullptr) {
    return failf(COHORT_ERR_INTERNAL, "schedule step %d sends to rank %d, which has no channel",
                 step_, peer);
  }
  if (p->direct) return send_direct(p, to);
  const char *data =
      p->by_reference ? reinterpret_cast<const char *>(&p->reference) : address(p->action.src);
  const size_t payload_total = p->by_reference ? sizeof(coll::Reference) : p->total;
  while (p->done < p->wire) {
    size_t room = 0;
    char *into = static_cast<char *>(to->reserve(&room));
    if (room == 0) return broken(*p, to->failure());
    size_t n = std::min(room, p->wire - p->done);
    size_t payload = p->done < payload_total ? std::min(n, payload_total - p->done) : 0;
    if (payload > 0) std::memcpy(into, data + p->done, payload);
    to->commit(n);  // the padding after the payload goes as is
    p->done += n;
    moved_ = true;
  }
  if (p->by_reference) {
    if (p->ack_target == 0) p->ack_target = to->note_reference();
    if (to->acks() < p->ack_target) return broken(*p, to->failure());  // the peer still reads it
    moved_ = true;
  }
  p->complete = true;
  return COHORT_SUCCESS;
}

void HostExecution::receive_bytes(Pending *p, char *dst, const char *operand, const char *bytes,
                                  size_t n) {
  // Whole elements only: channel regions start aligned, so none is ever split.
  const size_t count = n / elem_;
  const cohort_op_t op = algorithm_->args().op;
  if (p->action.verb != coll::Verb::kRecvReduce) {
    std::memcpy(dst, bytes, n);
  } else if (dst == operand) {
    reduce_into(dst, bytes, count, dtype_, op);
  } else {
    const void *ins[2] = {operand, bytes};
    reduce_multi(dst, ins, 2, count, dtype_, op);
  }
}

Status HostExecution::advance_recv(Pending *p) {
  const int peer = p->action.peer;
  RecvChannel *from = peers_.channels(peer).from;
  if (from == nullptr) {
    return failf(COHORT_ERR_INTERNAL,
                 "schedule step %d receives from rank %d, which has no channel", step_, peer);
  }
  char *dst = address(p->action.dst);
  const char *operand =
      p->action.verb == coll::Verb::kRecvReduce ? address(p->action.src) : nullptr;
  if (p->direct) return receive_direct(p, from, dst, operand);
  while (p->done < p->wire) {
    size_t arrived = 0;
    const char *bytes = static_cast<const char *>(from->peek(&arrived));
    if (arrived == 0) return broken(*p, from->failure());
    size_t n = std::min(arrived, p->wire - p->done);
    if (p->by_reference) {
      std::memcpy(reinterpret_cast<char *>(&p->reference) + p->done, bytes, n);
    } else if (p->done < p->total) {
      size_t payload = std::min(n, p->total - p->done);
      receive_bytes(p, dst + p->done, operand ? operand + p->done : nullptr, bytes, payload);
    }
    from->consume(n);
    p->done += n;
    moved_ = true;
  }
  if (p->by_reference) {
    Status s = read_reference(p, from, dst, operand);
    if (s != COHORT_SUCCESS) return s;
  }
  p->complete = true;
  return COHORT_SUCCESS;
}

// Reads the referenced span straight from the sender's memory (a reduction through a
// cache-sized piece), then acknowledges it so the sender may reuse the span.
Status HostExecution::read_reference(Pending *p, RecvChannel *from, char *dst,
                                     const char *operand) {
  constexpr size_t kPiece = 256 * 1024;
  if (p->reference.bytes != p->total) {
    return failf(COHORT_ERR_INTERNAL,
                 "schedule step %d: rank %d references %llu bytes where %zu were expected", step_,
                 p->action.peer, static_cast<unsigned long long>(p->reference.bytes), p->total);
  }
  const char *remote = reinterpret_cast<const char *>(p->reference.address);
  const bool reduce = p->action.verb == coll::Verb::kRecvReduce;
  if (reduce && bounce_.size() < kPiece) bounce_.resize(kPiece);
  while (p->read < p->total) {
    const size_t n = reduce ? std::min(kPiece, p->total - p->read) : p->total - p->read;
    char *into = reduce ? bounce_.data() : dst + p->read;
    Status s = from->read_remote(remote + p->read, into, n);
    if (is_error(s)) return s;
    if (reduce) receive_bytes(p, dst + p->read, operand + p->read, into, n);
    p->read += n;
  }
  from->ack();
  moved_ = true;
  return COHORT_SUCCESS;
}

// A direct message: the transport sends the span as it is; the transfer completes once all of
// it left (the span may change again from then on).
Status HostExecution::send_direct(Pending *p, SendChannel *to) {
  if (!p->started) {
    Status s = to->start_direct(address(p->action.src), p->total);
    if (is_error(s)) return broken(*p, s);
    p->started = true;
    moved_ = true;
  }
  if (!to->direct_sent()) return broken(*p, to->failure());
  p->done = p->wire;
  p->complete = true;
  moved_ = true;
  return COHORT_SUCCESS;
}

// A direct message lands in the destination itself, or, for a reduction (which reads the
// destination), in the channel's buffers, a piece at a time, each reduced as it lands while
// the next ones arrive.
Status HostExecution::receive_direct(Pending *p, RecvChannel *from, char *dst,
                                     const char *operand) {
  if (!p->started) {
    Status s = from->start_direct(operand != nullptr ? nullptr : dst, p->total);
    if (is_error(s)) return broken(*p, s);
    p->started = true;
  }
  while (p->done < p->total) {
    size_t n = 0;
    const char *piece = static_cast<const char *>(from->peek_direct(&n));
    if (n == 0) return broken(*p, from->failure());
    n = std::min(n, p->total - p->done);
    if (piece != dst + p->done) {
      receive_bytes(p, dst + p->done, operand ? operand + p->done : nullptr, piece, n);
    }
    from->consume_direct(n);
    p->done += n;
    moved_ = true;
  }
  p->complete = true;
  return COHORT_SUCCESS;
}

// A transfer that cannot move: still in progress, or its channel broke (then the collective
// ends with the transport's reason, which names the peer).
Status HostExecution::broken(const Pending &p, Status channel_failure) const {
  if (!is_error(channel_failure)) return COHORT_IN_PROGRESS;
  return failf(channel_failure, "step %d of %d, %s rank %d: %s", step_ + 1, algorithm_->num_steps(),
               p.action.verb == coll::Verb::kSend ? "send to" : "receive from", p.action.peer,
               last_error().c_str());
}

std::string HostExecution::waiting() const {
  std::string out = strprintf("step %d of %d", step_ + 1, algorithm_->num_steps());
  for (const Pending &p : transfers_) {
    if (p.complete) continue;
    bool sending = p.action.verb == coll::Verb::kSend;
    const size_t moved = p.by_reference ? (sending ? 0 : p.read) : std::min(p.done, p.total);
    out += strprintf(
        ": %s rank %d (%zu of %zu bytes%s)", sending ? "send to" : "receive from", p.action.peer,
        moved, p.total,
        p.by_reference ? (sending && p.done == p.wire ? ", by reference, unread" : ", by reference")
        : p.direct     ? ", direct"
                       : "");
  }
  return out;
}

std::vector<int> HostExecution::waiting_on() const {
  std::vector<int> ranks;
  for (const Pending &p : transfers_) {
    if (!p.complete) ranks.push_back(p.action.peer);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

void HostExecution::run_local_actions() {
  for (const coll::Action &a : actions_) {
    switch (a.verb) {
      case coll::Verb::kCopy:
        if (a.dst.count > 0) std::memmove(address(a.dst), address(a.src), a.dst.count * elem_);
        break;
      case coll::Verb::kReduce:
        reduce_into(address(a.dst), address(a.src), a.dst.count, dtype_, algorithm_->args().op);
        break;
      case coll::Verb::kFinalize:
        finalize_avg(address(a.dst), a.dst.count, dtype_, algorithm_->args().size);
        break;
      default: break;
    }
  }
}

}  // namespace cohort::coll
