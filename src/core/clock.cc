#include "core/clock.h"

#include <sched.h>

#include <algorithm>

namespace cohort {

namespace {

// Tells the core this is a spin-wait (frees the sibling hyperthread, saves power).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void Backoff::pause() {
  if (spins_ < max_spins_) {
    ++spins_;
    cpu_relax();
    return;
  }
  constexpr int64_t kYieldNs = 2 * 1000 * 1000;
  constexpr long kMaxSleepNs = 100 * 1000;
  int64_t now = now_ns();
  if (start_ns_ == 0) start_ns_ = now;
  if (now - start_ns_ < kYieldNs) {
    sched_yield();
    return;
  }
  long sleep_ns = std::min(kMaxSleepNs, 1000L << std::min(sleeps_++, 7u));
  timespec ts{0, sleep_ns};
  nanosleep(&ts, nullptr);
}

}  // namespace cohort
