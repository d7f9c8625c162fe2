// A posted collective: its schedule, its scratch, and (once it reaches the head of its team's
// queue) its execution.  A team runs its requests one at a time, in posting order: every rank
// posts them in the same order, and they share the team's channels, whose byte streams must
// not interleave two collectives.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coll/execution.h"
#include "core/status.h"

namespace cohort {

constexpr uint32_t kIdlePollsPerClockRead = 64;

// One send or receive of a group (cohort_send / cohort_recv, and their _stream forms).
struct P2POp {
  bool send = true;
  void *buf = nullptr;  // read for a send
  size_t count = 0;
  cohort_dtype_t dtype = COHORT_INT8;
  int peer = 0;
  bool on_stream = false;  // stream-ordered (cohort_send_stream / cohort_recv_stream)
  void *stream = nullptr;  // its cudaStream_t (null: CUDA's default stream)
  bool device = false;     // buf is GPU device memory (set by the check)
};

// Holds a request back until something outside the team is ready for it (the stream that
// copies a staged collective's input into host memory: coll_staged.cc), and hears its end.
class RequestGate {
 public:
  virtual ~RequestGate() = default;
  virtual bool open() const = 0;
  // Once, however the request ended: done, failed, or ended unrun because the team stopped.
  virtual void end(Status status) = 0;
};

struct CollRequest {
  const char *what = "";  // "allreduce", ..., "send/recv group": names it in messages
  std::unique_ptr<coll::Algorithm> algorithm;
  coll::Buffers buffers;  // scratch set when it starts
  cohort_dtype_t dtype = COHORT_INT8;
  std::vector<char> scratch;
  std::unique_ptr<coll::Execution> execution;  // kept (and restarted) when reused
  bool started = false;
  bool draining = false;  // schedule done, sends still completing
  // Idle polls since bytes last moved; the clock is read (and the transports asked for
  // notices) every kIdlePollsPerClockRead of them, from which the idle time is measured.
  uint32_t idle_polls = 0;
  int64_t idle_since_ns = 0;  // 0: not read since the last movement
  bool moved = false;         // the last poll moved bytes (a waiter resets its back-off)
  // Written by whichever thread polls the queue (the caller's or the progress engine's) and
  // read by the caller without the queue's lock: a request ends through end(), which
  // publishes its error before its status.
  std::atomic<Status> status{COHORT_IN_PROGRESS};
  std::string error;                  // the failure's message
  bool told = false;                  // ended by a peer's notice (so not announced again)
  std::shared_ptr<RequestGate> gate;  // none for a call made on the host
  // A blocking send/recv group on device memory: the team's own stream copies its receives
  // back once it ended (CollFront::settle_p2p waits for that).
  bool copies_back = false;
  // Queued by a graph's replay when its stream reached it (staged_replay.h): it may run ahead
  // of requests queued before it whose gates are closed.  Set before queueing, like `gate`.
  bool replayed = false;
  int64_t queued_ns = 0;  // gated requests: when queued, and when the gate was seen open
  int64_t opened_ns = 0;

  // The status, with the error as this thread's last error when it failed.
  Status outcome() const {
    const Status s = status.load(std::memory_order_acquire);
    return is_error(s) ? fail(s, error) : s;
  }

  // Ends the request: a reader that sees `s` sees `why` too.
  void end(Status s, std::string why = {}) {
    error = std::move(why);
    status.store(s, std::memory_order_release);
  }

  // Ready to be queued again (a blocking call reuses its request): the execution and the
  // scratch keep their memory.
  void reset(const char *name) {
    what = name;
    status = COHORT_IN_PROGRESS;
    error.clear();
    started = draining = moved = told = copies_back = false;
    idle_polls = 0;
    idle_since_ns = 0;
    queued_ns = opened_ns = 0;
  }
};

}  // namespace cohort
