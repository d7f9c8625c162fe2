#include "team/progress_engine.h"

#include <algorithm>

#include "core/clock.h"
#include "core/threads.h"
#include "team/coll_front.h"

namespace cohort {

ProgressEngine &ProgressEngine::instance() {
  // Never destroyed: a team may go away in an exit handler, after static destructors.
  static ProgressEngine *engine = new ProgressEngine;
  return *engine;
}

void ProgressEngine::watch(CollFront *front) {
  // Polled already: no lock, which the engine holds while it polls (a stream call watches
  // its team every time).  poll_all() clears the flag before it drops a front, then looks
  // again, so a request queued before this call is never left unpolled.
  if (front->watched_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(fronts_.begin(), fronts_.end(), front) == fronts_.end()) fronts_.push_back(front);
  if (!started_) {  // one thread for the process's life: it sleeps once no team is watched
    started_ = true;
    std::thread([this] { run(); }).detach();  // it outlives main
  }
  wake_.notify_one();
}

void ProgressEngine::forget(CollFront *front) {
  std::lock_guard<std::mutex> lock(mutex_);
  fronts_.erase(std::remove(fronts_.begin(), fronts_.end(), front), fronts_.end());
  front->watched_.store(false);
}

// One poll of every watched front (under mutex_); drops those with nothing staged left.
// True when some moved.
bool ProgressEngine::poll_all() {
  bool moved = false;
  for (size_t i = 0; i < fronts_.size();) {
    bool front_moved = false;
    CollFront &front = *fronts_[i];
    bool keep = front.progress_staged(&front_moved);
    if (!keep) {
      front.watched_.store(false);
      keep = front.staged_pending();
      if (keep) front.watched_.store(true);
    }
    if (keep) {
      ++i;
    } else {
      fronts_.erase(fronts_.begin() + static_cast<long>(i));
    }
    moved = moved || front_moved;
  }
  return moved;
}

void ProgressEngine::run() {
  spread_this_thread();
  Backoff backoff;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (fronts_.empty()) {
      wake_.wait(lock, [this] { return !fronts_.empty(); });
      backoff.reset();
    }
    if (poll_all()) backoff.reset();
    // Let watch() and forget() in between polls.
    lock.unlock();
    backoff.pause();
    lock.lock();
  }
}

}  // namespace cohort
