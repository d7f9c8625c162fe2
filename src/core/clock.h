// Monotonic nanosecond clock and a polling back-off that yields the core.
#pragma once

#include <cstdint>
#include <limits>
#include <ctime>

namespace cohort {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// now_ns() + seconds, saturating: a huge or infinite timeout never wraps into the past.
inline int64_t deadline_after(double seconds) {
  constexpr double kMaxNs = 9.0e18;
  int64_t now = now_ns();
  double ns = seconds * 1e9;
  if (!(ns < kMaxNs - static_cast<double>(now)))
    return std::numeric_limits<int64_t>::max();  // also inf and NaN
  return now + static_cast<int64_t>(ns);
}

// Polling loops call pause() between polls.  For the first kYieldNs of a wait it yields
// the core (other ranks on an oversubscribed node run; an idle node answers at once), then it
// sleeps, 1 us doubling to a 100 us cap, so a long wait costs almost no CPU.  The limit is in
// time, not polls: on an idle many-core node a yield returns at once, and a count of them
// would reach the long sleeps within microseconds, adding a sleep to every message's latency.
class Backoff {
 public:
  Backoff() = default;
  // First `spins` pauses spin on the core without a system call: for latency-bound waits
  // where every rank has a core of its own (spinning on a shared core delays the peer).
  explicit Backoff(unsigned spins) : max_spins_(spins) {}
  void pause();
  // Call when the awaited thing made progress: the next wait starts with yields again.
  void reset() {
    start_ns_ = 0;
    sleeps_ = 0;
    spins_ = 0;
  }

 private:
  int64_t start_ns_ = 0;
  unsigned sleeps_ = 0;
  unsigned spins_ = 0;
  unsigned max_spins_ = 0;
};

}  // namespace cohort
