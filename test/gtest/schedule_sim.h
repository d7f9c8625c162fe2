// A simulator of n ranks running their schedules: messages delivered in order per pair of
// ranks, rendezvous (no buffering), each receive checked against its send's size.  Shared by
// the schedule tests (test_schedules.cc, test_schedules_v.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "coll/schedule.h"

namespace cohort::coll {

using Value = int64_t;

inline Value apply(cohort_op_t op, Value a, Value b) {
  auto u = [](Value v) { return static_cast<uint64_t>(v); };
  switch (op) {
    case COHORT_SUM:
    case COHORT_AVG: return static_cast<Value>(u(a) + u(b));
    case COHORT_PROD: return static_cast<Value>(u(a) * u(b));
    case COHORT_MIN: return std::min(a, b);
    case COHORT_MAX: return std::max(a, b);
    default: return 0;
  }
}

struct Message {
  std::vector<Value> data;
  std::vector<bool> heard;  // ranks this message carries news of (for the barrier)
  int *outstanding;         // the sender's count of messages not yet received
};

// One simulated rank: its buffers and its place in the schedule.  Channels have no capacity
// (rendezvous): a step ends only once its peers have received its sends, the strictest a real
// transport can be, so a schedule that relies on buffering deadlocks here.
struct SimRank {
  std::vector<Value> *src = nullptr;
  size_t src_base = 0;
  std::vector<Value> *dst = nullptr;
  size_t dst_base = 0;
  std::vector<Value> scratch;
  std::unique_ptr<Algorithm> algorithm;
  int step = 0;
  bool sent = false;      // this step's sends posted
  bool received = false;  // this step's receives applied
  int outstanding = 0;    // sends not yet received by their peer
  std::vector<bool> heard;
};

class Simulator {
 public:
  Simulator(int n, cohort_op_t op) : n_(n), op_(op), ranks_(n) {
    for (int r = 0; r < n; ++r) ranks_[r].heard.assign(n, false), ranks_[r].heard[r] = true;
  }

  SimRank &rank(int r) { return ranks_[r]; }

  // Runs every rank to the end; false on a deadlock or a mismatched message.
  bool run() {
    for (SimRank &r : ranks_) r.scratch.assign(r.algorithm->scratch_count(), 0x5a5a);
    for (;;) {
      bool progress = false, done = true;
      for (int r = 0; r < n_; ++r) {
        SimRank &me = ranks_[r];
        if (me.step >= me.algorithm->num_steps()) continue;
        done = false;
        if (advance(r)) progress = true;
        if (failed_) return false;
      }
      if (done) return queues_empty();
      if (!progress) {
        ADD_FAILURE() << "deadlock";
        return false;
      }
    }
  }

 private:
  Value *at(SimRank &me, const Span &s) {
    switch (s.buffer) {
      case Buffer::kSrc: return me.src->data() + me.src_base + s.offset;
      case Buffer::kDst: return me.dst->data() + me.dst_base + s.offset;
      case Buffer::kScratch: return me.scratch.data() + s.offset;
      case Buffer::kUser: break;  // send/recv groups only: no collective schedule uses it
    }
    ADD_FAILURE() << "a collective schedule named a caller's group buffer";
    return nullptr;
  }

  void check_span(SimRank &me, const Span &s) {
    size_t size = s.buffer == Buffer::kSrc   ? me.src->size() - me.src_base
                  : s.buffer == Buffer::kDst ? me.dst->size() - me.dst_base
                                             : me.scratch.size();
    if (s.offset + s.count > size) {
      ADD_FAILURE() << "span [" << s.offset << ", +" << s.count << ") beyond buffer " << size;
      failed_ = true;
    }
  }

  bool advance(int r) {
    SimRank &me = ranks_[r];
    me.algorithm->step(me.step, &actions_);
    for (const Action &a : actions_) {
      check_span(me, a.dst.count || a.verb != Verb::kSend ? a.dst : a.src);
      check_span(me, a.src);
    }
    if (failed_) return false;
    if (!me.sent) {
      for (const Action &a : actions_) {
        if (a.verb != Verb::kSend) continue;
        Value *p = at(me, a.src);
        queue(r, a.peer).push_back(
            Message{std::vector<Value>(p, p + a.src.count), me.heard, &me.outstanding});
        ++me.outstanding;
      }
      me.sent = true;
    }
    if (me.received) return finish_step(me);
    std::map<int, size_t> needed;
    for (const Action &a : actions_) {
      if (a.verb == Verb::kRecv || a.verb == Verb::kRecvReduce) ++needed[a.peer];
    }
    for (auto [peer, count] : needed) {
      if (queue(peer, r).size() < count) return false;  // wait for the peer
    }
    for (const Action &a : actions_) {
      if (a.verb != Verb::kRecv && a.verb != Verb::kRecvReduce) continue;
      Message m = std::move(queue(a.peer, r).front());
      queue(a.peer, r).pop_front();
      --*m.outstanding;
      if (m.data.size() != a.dst.count) {
        ADD_FAILURE() << "rank " << r << " step " << me.step << ": receives " << a.dst.count
                      << " from " << a.peer << " which sent " << m.data.size();
        failed_ = true;
        return false;
      }
      for (int k = 0; k < n_; ++k) me.heard[k] = me.heard[k] || m.heard[k];
      Value *d = at(me, a.dst);
      const Value *s = a.verb == Verb::kRecvReduce ? at(me, a.src) : nullptr;
      for (size_t i = 0; i < m.data.size(); ++i) d[i] = s ? apply(op_, m.data[i], s[i]) : m.data[i];
    }
    me.received = true;
    return finish_step(me) || true;  // receiving was progress
  }

  // Local actions and the next step, once every send of this step was received.
  bool finish_step(SimRank &me) {
    if (me.outstanding > 0) return false;
    me.algorithm->step(me.step, &actions_);
    for (const Action &a : actions_) {
      if (a.verb == Verb::kCopy) {
        std::vector<Value> tmp(at(me, a.src), at(me, a.src) + a.src.count);
        std::copy(tmp.begin(), tmp.end(), at(me, a.dst));
      } else if (a.verb == Verb::kReduce) {
        for (size_t i = 0; i < a.dst.count; ++i)
          at(me, a.dst)[i] = apply(op_, at(me, a.dst)[i], at(me, a.src)[i]);
      } else if (a.verb == Verb::kFinalize) {
        for (size_t i = 0; i < a.dst.count; ++i) at(me, a.dst)[i] /= n_;
      }
    }
    ++me.step;
    me.sent = false;
    me.received = false;
    return true;
  }

  std::deque<Message> &queue(int from, int to) { return queues_[{from, to}]; }
  bool queues_empty() {
    for (auto &[key, q] : queues_) {
      if (!q.empty()) {
        ADD_FAILURE() << q.size() << " messages from " << key.first << " to " << key.second
                      << " never received";
        return false;
      }
    }
    return true;
  }

  int n_;
  cohort_op_t op_;
  std::vector<SimRank> ranks_;
  std::map<std::pair<int, int>, std::deque<Message>> queues_;
  std::vector<Action> actions_;
  bool failed_ = false;
};

}  // namespace cohort::coll
