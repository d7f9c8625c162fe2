#include "core/clock.h"

#include <sched.h>

#include <algorithm>

namespace cohort {

void Backoff::pause() {
  constexpr unsigned kYieldPolls = 32;
  constexpr long kMaxSleepNs = 200 * 1000;
  ++polls_;
  if (polls_ <= kYieldPolls) {
    sched_yield();
    return;
  }
  long sleep_ns = std::min(kMaxSleepNs, 1000L << std::min(polls_ - kYieldPolls, 8u));
  timespec ts{0, sleep_ns};
  nanosleep(&ts, nullptr);
}

}  // namespace cohort
