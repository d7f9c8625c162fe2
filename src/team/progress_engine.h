// The progress engine: one thread per process, shared by every team, that moves the host
// side of collectives nobody waits for on the host.  A stream-ordered collective on device
// memory that goes through host memory (coll_staged.cc) is queued on its team like a host
// collective, held back until the stream has copied its input out; no thread of the caller's
// waits for it, so this one polls the team's queue until nothing staged is left there.  It also
// polls the doorbells of collectives captured into CUDA graphs (staged_replay.h), as long as
// their graphs live, and then never sleeps (it yields its core).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cohort {

class CollFront;
struct ReplayHub;

class ProgressEngine {
 public:
  static ProgressEngine &instance();

  // Polls `front` until it has nothing staged left (CollFront::progress_staged); starts the
  // thread the first time.
  void watch(CollFront *front);
  // Returns once the engine no longer polls `front` (its team is going away).
  void forget(CollFront *front);
  // Polls the doorbells of `hub`'s live captures, whose team went away, until their graphs do
  // (each replay then runs nothing: staged_replay.h).
  void adopt(std::shared_ptr<ReplayHub> hub);

 private:
  ProgressEngine() = default;
  void start_locked();
  void run();
  struct Poll {
    bool moved = false;  // something moved
    bool awake = false;  // a capture's doorbell may ring: never sleep
  };
  Poll poll_all();

  std::mutex mutex_;  // held while a front is polled: forget() waits for that poll
  std::condition_variable wake_;
  std::vector<CollFront *> fronts_;
  std::vector<std::shared_ptr<ReplayHub>> orphans_;  // hubs of teams gone, with live captures
  bool started_ = false;  // the thread (detached, so not joinable: this says it runs)
};

}  // namespace cohort
