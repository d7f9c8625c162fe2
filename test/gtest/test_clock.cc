// Unit tests for the clock helpers (src/core/clock.*).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/clock.h"

namespace cohort {
namespace {

TEST(DeadlineAfter, OrdinarySecondsLandInTheFuture) {
  int64_t before = now_ns();
  int64_t deadline = deadline_after(2.5);
  int64_t after = now_ns();
  EXPECT_GE(deadline, before + 2'500'000'000);
  EXPECT_LE(deadline, after + 2'500'000'000);
}

TEST(DeadlineAfter, HugeAndInfiniteTimeoutsSaturateInsteadOfWrapping) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(deadline_after(1e10), kMax);
  EXPECT_EQ(deadline_after(1e300), kMax);
  EXPECT_EQ(deadline_after(std::numeric_limits<double>::infinity()), kMax);
  EXPECT_EQ(deadline_after(std::nan("")), kMax);
  EXPECT_GT(deadline_after(9.0e8), now_ns());  // large but representable: still in the future
}

TEST(Backoff, FirstPausesYieldWithoutSleeping) {
  Backoff backoff;
  int64_t start = now_ns();
  for (int i = 0; i < 100; ++i) backoff.pause();
  // 100 yields take far less than 100 sleeps of >= 1 us would on an idle or busy machine.
  EXPECT_LT(now_ns() - start, 2'000'000'000);
}

TEST(Backoff, LongWaitsSleepAtMostTheCap) {
  Backoff backoff;
  int64_t start = now_ns();
  while (now_ns() - start < 3'000'000) backoff.pause();  // past the 2 ms of yields
  int64_t t0 = now_ns();
  for (int i = 0; i < 20; ++i) backoff.pause();
  double per_pause_us = (now_ns() - t0) / 20.0 / 1000.0;
  EXPECT_GT(per_pause_us, 0.5);    // it does sleep
  EXPECT_LT(per_pause_us, 20000);  // 100 us cap, with generous scheduling slack
}

}  // namespace
}  // namespace cohort
