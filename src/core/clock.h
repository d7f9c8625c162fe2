// Monotonic nanosecond clock and a polling back-off that yields the core.
#pragma once

#include <cstdint>
#include <ctime>

namespace cohort {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Polling loops call pause() between polls: a few yields, then sleeps growing to a cap, so
// that 8 ranks oversubscribed on 2 cores still make progress.
class Backoff {
 public:
  void pause();
  void reset() { polls_ = 0; }

 private:
  unsigned polls_ = 0;
};

}  // namespace cohort
