#include "workers.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace cohort_emul {
namespace {

struct Worker {
  std::mutex mutex;
  std::condition_variable wake;
  std::function<void()> task;  // set by run_on_worker while the worker is idle
};

// Idle workers.  Never destroyed: workers wait on it until the process exits.
struct Pool {
  std::mutex mutex;
  std::vector<Worker *> idle;
};
Pool *the_pool = nullptr;

// A forked child has none of the parent's workers: it starts with a pool of its own (the
// parent's stays locked across fork(), so the child's copy of it is consistent).
void lock_for_fork() { the_pool->mutex.lock(); }
void unlock_after_fork() { the_pool->mutex.unlock(); }
void fresh_pool_in_child() { the_pool = new Pool; }

Pool &pool() {
  static const bool created = [] {
    the_pool = new Pool;
    pthread_atfork(lock_for_fork, unlock_after_fork, fresh_pool_in_child);
    return true;
  }();
  (void)created;
  return *the_pool;
}

void work(Worker *w) {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(w->mutex);
      w->wake.wait(lock, [&] { return static_cast<bool>(w->task); });
      task = std::move(w->task);
      w->task = nullptr;
    }
    task();
    task = nullptr;  // what it captured goes before the worker is offered again
    std::lock_guard<std::mutex> lock(pool().mutex);
    pool().idle.push_back(w);
  }
}

}  // namespace

void run_on_worker(std::function<void()> task) {
  Worker *w = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    if (!pool().idle.empty()) {
      w = pool().idle.back();
      pool().idle.pop_back();
    }
  }
  if (w == nullptr) {
    w = new Worker;  // lives as long as its thread: the process
    w->task = std::move(task);
    std::thread(work, w).detach();
    return;
  }
  std::lock_guard<std::mutex> lock(w->mutex);
  w->task = std::move(task);
  w->wake.notify_one();
}

}  // namespace cohort_emul
