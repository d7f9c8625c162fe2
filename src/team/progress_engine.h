// The progress engine: one thread per process, shared by every team, that moves the host
// side of collectives nobody waits for on the host.  A stream-ordered collective on device
// memory that goes through host memory (coll_staged.cc) is queued on its team like a host
// collective, held back until the stream has copied its input out; no thread of the caller's
// waits for it, so this one polls the team's queue until nothing staged is left there.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace cohort {

class CollFront;

class ProgressEngine {
 public:
  static ProgressEngine &instance();

  // Polls `front` until it has nothing staged left (CollFront::progress_staged); starts the
  // thread the first time.
  void watch(CollFront *front);
  // Returns once the engine no longer polls `front` (its team is going away).
  void forget(CollFront *front);

 private:
  ProgressEngine() = default;
  void run();
  bool poll_all();

  std::mutex mutex_;  // held while a front is polled: forget() waits for that poll
  std::condition_variable wake_;
  std::vector<CollFront *> fronts_;
  bool started_ = false;  // the thread (detached, so not joinable: this says it runs)
};

}  // namespace cohort
