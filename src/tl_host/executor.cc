#include "tl_host/executor.h"

#include <algorithm>
#include <cstring>

#include "tl_host/dtype.h"
#include "tl_host/reduce.h"

namespace cohort::tl_host {

size_t wire_bytes(size_t payload) {
  size_t padded = (payload + kChannelAlign - 1) / kChannelAlign * kChannelAlign;
  return std::max(padded, kChannelAlign);
}

Execution::Execution(const coll::Algorithm &algorithm, const HostBuffers &buffers,
                     cohort_dtype_t dtype, const std::vector<PeerChannels> &peers)
    : algorithm_(&algorithm),
      buffers_(buffers),
      dtype_(dtype),
      elem_(dtype_size(dtype)),
      peers_(peers) {}

void Execution::restart(const coll::Algorithm &algorithm, const HostBuffers &buffers,
                        cohort_dtype_t dtype) {
  algorithm_ = &algorithm;
  buffers_ = buffers;
  dtype_ = dtype;
  elem_ = dtype_size(dtype);
  step_ = -1;
  actions_.clear();
  transfers_.clear();
  moved_ = false;
}

char *Execution::address(const coll::Span &span) const {
  const void *base = span.buffer == coll::Buffer::kSrc    ? buffers_.src
                     : span.buffer == coll::Buffer::kDst  ? buffers_.dst
                     : span.buffer == coll::Buffer::kUser ? buffers_.user[span.user]
                                                          : buffers_.scratch;
  return const_cast<char *>(static_cast<const char *>(base)) + span.offset * elem_;
}

void Execution::start_step() {
  algorithm_->step(step_, &actions_);
  transfers_.clear();
  for (const coll::Action &a : actions_) {
    if (a.verb != coll::Verb::kSend && a.verb != coll::Verb::kRecv &&
        a.verb != coll::Verb::kRecvReduce) {
      continue;
    }
    Pending p;
    p.action = a;
    p.total = (a.verb == coll::Verb::kSend ? a.src.count : a.dst.count) * elem_;
    p.wire = wire_bytes(p.total);
    transfers_.push_back(p);
  }
}

Status Execution::progress() {
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
      if (p.done == p.wire) continue;
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
                                  [](const Pending &p) { return p.done == p.wire; });
      if (!now_done) return COHORT_IN_PROGRESS;
    }
    run_local_actions();
    moved_ = true;
    if (++step_ < algorithm_->num_steps()) start_step();
  }
  return COHORT_SUCCESS;
}

Status Execution::advance_send(Pending *p) {
  const int peer = p->action.peer;
  if (peer < 0 || peer >= static_cast<int>(peers_.size()) || peers_[peer].to == nullptr) {
    return failf(COHORT_ERR_INTERNAL, "schedule step %d sends to rank %d, which has no channel",
                 step_, peer);
  }
  const char *data = address(p->action.src);
  while (p->done < p->wire) {
    size_t room = 0;
    char *into = static_cast<char *>(peers_[peer].to->reserve(&room));
    if (room == 0) return COHORT_IN_PROGRESS;
    size_t n = std::min(room, p->wire - p->done);
    size_t payload = p->done < p->total ? std::min(n, p->total - p->done) : 0;
    if (payload > 0) std::memcpy(into, data + p->done, payload);
    peers_[peer].to->commit(n);  // the padding after the payload goes as is
    p->done += n;
    moved_ = true;
  }
  return COHORT_SUCCESS;
}

Status Execution::advance_recv(Pending *p) {
  const int peer = p->action.peer;
  if (peer < 0 || peer >= static_cast<int>(peers_.size()) || peers_[peer].from == nullptr) {
    return failf(COHORT_ERR_INTERNAL,
                 "schedule step %d receives from rank %d, which has no channel", step_, peer);
  }
  RecvChannel *from = peers_[peer].from;
  char *dst = address(p->action.dst);
  const bool reduce = p->action.verb == coll::Verb::kRecvReduce;
  const char *operand = reduce ? address(p->action.src) : nullptr;
  while (p->done < p->wire) {
    size_t arrived = 0;
    const char *bytes = static_cast<const char *>(from->peek(&arrived));
    if (arrived == 0) return COHORT_IN_PROGRESS;
    size_t n = std::min(arrived, p->wire - p->done);
    if (p->done < p->total) {
      // Whole elements only: channel regions start aligned, so none is ever split.
      size_t payload = std::min(n, p->total - p->done);
      size_t count = payload / elem_;
      if (reduce && dst == operand) {
        reduce_into(dst + p->done, bytes, count, dtype_, algorithm_->args().op);
      } else if (reduce) {
        const void *ins[2] = {operand + p->done, bytes};
        reduce_multi(dst + p->done, ins, 2, count, dtype_, algorithm_->args().op);
      } else {
        std::memcpy(dst + p->done, bytes, payload);
      }
    }
    from->consume(n);
    p->done += n;
    moved_ = true;
  }
  return COHORT_SUCCESS;
}

std::string Execution::waiting() const {
  std::string out = strprintf("step %d of %d", step_ + 1, algorithm_->num_steps());
  for (const Pending &p : transfers_) {
    if (p.done == p.wire) continue;
    bool sending = p.action.verb == coll::Verb::kSend;
    out += strprintf(": %s rank %d (%zu of %zu bytes)", sending ? "send to" : "receive from",
                     p.action.peer, std::min(p.done, p.total), p.total);
  }
  return out;
}

std::vector<int> Execution::waiting_on() const {
  std::vector<int> ranks;
  for (const Pending &p : transfers_) {
    if (p.done != p.wire) ranks.push_back(p.action.peer);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

void Execution::run_local_actions() {
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

}  // namespace cohort::tl_host
