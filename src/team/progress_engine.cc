#include "team/progress_engine.h"

#include <sched.h>

#include <algorithm>

#include "core/clock.h"
#include "core/threads.h"
#include "team/coll_front.h"
#include "team/staged_replay.h"

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
  start_locked();
}

// The thread, started once for the process's life (it sleeps once nothing is watched), told
// that something is.
void ProgressEngine::start_locked() {
  if (!started_) {
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

void ProgressEngine::adopt(std::shared_ptr<ReplayHub> hub) {
  std::lock_guard<std::mutex> lock(mutex_);
  orphans_.push_back(std::move(hub));
  start_locked();
}

// One poll of every watched front and orphaned hub (under mutex_); drops those with nothing
// left to poll.
ProgressEngine::Poll ProgressEngine::poll_all() {
  Poll p;
  for (size_t i = 0; i < fronts_.size();) {
    bool front_moved = false;
    CollFront &front = *fronts_[i];
    p.awake = p.awake || front.has_captures();
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
    p.moved = p.moved || front_moved;
  }
  for (size_t i = 0; i < orphans_.size();) {
    p.moved = orphans_[i]->poll() || p.moved;
    if (orphans_[i]->live_count.load() == 0) {
      orphans_.erase(orphans_.begin() + static_cast<long>(i));
    } else {
      p.awake = true;
      ++i;
    }
  }
  return p;
}

void ProgressEngine::run() {
  spread_this_thread();
  name_this_thread("cohort-progress");
  Backoff backoff;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (fronts_.empty() && orphans_.empty()) {
      wake_.wait(lock, [this] { return !fronts_.empty() || !orphans_.empty(); });
      backoff.reset();
    }
    const Poll p = poll_all();
    if (p.moved) backoff.reset();
    // Let watch() and forget() in between polls.
    lock.unlock();
    if (p.awake) {
      sched_yield();  // a doorbell may ring any time: no sleep
    } else {
      backoff.pause();
    }
    lock.lock();
  }
}

}  // namespace cohort
