// Unit tests for status strings, the thread-local last error and rank lists
// (src/core/status.*, src/team/rank_list.*).
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cohort.h"
#include "core/status.h"
#include "team/rank_list.h"

namespace cohort {
namespace {

const cohort_status_t kAllStatuses[] = {
    COHORT_SUCCESS,           COHORT_IN_PROGRESS,       COHORT_ERR_INVALID_ARG,
    COHORT_ERR_INVALID_USAGE, COHORT_ERR_NOT_SUPPORTED, COHORT_ERR_NO_MEMORY,
    COHORT_ERR_SYSTEM,        COHORT_ERR_MPI,           COHORT_ERR_CUDA,
    COHORT_ERR_TIMEOUT,       COHORT_ERR_ABORTED,       COHORT_ERR_INTERNAL};

// ---------------------------------------------------------- cohort_status_string

TEST(StatusString, EveryValueDistinctWithPrefix) {
  std::set<std::string> seen;
  for (cohort_status_t s : kAllStatuses) {
    const char *text = cohort_status_string(s);
    ASSERT_NE(text, nullptr) << s;
    std::string str = text;
    EXPECT_EQ(str.rfind("COHORT_", 0), 0u) << str;
    EXPECT_TRUE(seen.insert(str).second) << "duplicate " << str;
  }
  // Every enumerator has its own name, unlike an unknown value.
  std::string unknown = cohort_status_string(static_cast<cohort_status_t>(-99));
  EXPECT_EQ(unknown.rfind("COHORT_", 0), 0u) << unknown;
  EXPECT_EQ(seen.count(unknown), 0u) << unknown;
  // Any int a C caller passes is a value of the type (no UB under UBSan) and unknown.
  for (int garbage : {INT_MIN, -11, 2, 42, INT_MAX}) {
    EXPECT_EQ(unknown, cohort_status_string(static_cast<cohort_status_t>(garbage))) << garbage;
  }
}

TEST(StatusString, NamesMatchEnumerators) {
  EXPECT_STREQ(cohort_status_string(COHORT_SUCCESS), "COHORT_SUCCESS");
  EXPECT_STREQ(cohort_status_string(COHORT_IN_PROGRESS), "COHORT_IN_PROGRESS");
  EXPECT_STREQ(cohort_status_string(COHORT_ERR_INVALID_ARG), "COHORT_ERR_INVALID_ARG");
  EXPECT_STREQ(cohort_status_string(COHORT_ERR_TIMEOUT), "COHORT_ERR_TIMEOUT");
  EXPECT_STREQ(cohort_status_string(COHORT_ERR_INTERNAL), "COHORT_ERR_INTERNAL");
}

TEST(StatusString, OnlySuccessAndInProgressAreNotErrors) {
  for (cohort_status_t s : kAllStatuses) {
    bool expected_error = s != COHORT_SUCCESS && s != COHORT_IN_PROGRESS;
    EXPECT_EQ(is_error(s), expected_error) << cohort_status_string(s);
  }
}

// ---------------------------------------------------------------- last error

TEST(LastError, FailSetsMessageAndReturnsStatus) {
  clear_last_error();
  EXPECT_STREQ(cohort_last_error(), "");
  EXPECT_EQ(fail(COHORT_ERR_INVALID_ARG, "comm is MPI_COMM_NULL"), COHORT_ERR_INVALID_ARG);
  EXPECT_STREQ(cohort_last_error(), "comm is MPI_COMM_NULL");
  EXPECT_EQ(last_error(), "comm is MPI_COMM_NULL");
  EXPECT_EQ(fail(COHORT_ERR_TIMEOUT, "second"), COHORT_ERR_TIMEOUT);
  EXPECT_STREQ(cohort_last_error(), "second");
  clear_last_error();
  EXPECT_STREQ(cohort_last_error(), "");
}

TEST(LastError, FailfFormats) {
  EXPECT_EQ(failf(COHORT_ERR_MPI, "rank %d: %s (%.1f s)", 3, "MPI_Allgather", 2.5), COHORT_ERR_MPI);
  EXPECT_STREQ(cohort_last_error(), "rank 3: MPI_Allgather (2.5 s)");
}

TEST(LastError, FailfLongMessageNotTruncated) {
  std::string big(5000, 'z');
  failf(COHORT_ERR_INTERNAL, "<%s>", big.c_str());
  EXPECT_EQ(std::strlen(cohort_last_error()), big.size() + 2);
  EXPECT_EQ(last_error(), "<" + big + ">");
}

TEST(LastError, IsPerThread) {
  fail(COHORT_ERR_SYSTEM, "main thread error");
  std::string seen_in_thread = "unset";
  std::string after_fail_in_thread;
  std::thread t([&] {
    seen_in_thread = cohort_last_error();
    fail(COHORT_ERR_CUDA, "worker error");
    after_fail_in_thread = cohort_last_error();
  });
  t.join();
  EXPECT_EQ(seen_in_thread, "");
  EXPECT_EQ(after_fail_in_thread, "worker error");
  EXPECT_STREQ(cohort_last_error(), "main thread error");
}

TEST(Strprintf, Formats) {
  EXPECT_EQ(strprintf("%d-%s-%03d", 7, "x", 5), "7-x-005");
  EXPECT_EQ(strprintf("%s", ""), "");
  EXPECT_EQ(strprintf("%s", std::string(3000, 'q').c_str()).size(), 3000u);
}

TEST(Version, MatchesMacros) {
  EXPECT_EQ(cohort_version(),
            COHORT_VERSION_MAJOR * 10000 + COHORT_VERSION_MINOR * 100 + COHORT_VERSION_PATCH);
  EXPECT_EQ(cohort_version(), COHORT_VERSION_CODE);
}

// ---------------------------------------------------------- format_rank_list

TEST(FormatRankList, EmptyAndSingle) {
  EXPECT_EQ(format_rank_list({}), "");
  EXPECT_EQ(format_rank_list({5}), "5");
  EXPECT_EQ(format_rank_list({0}), "0");
}

TEST(FormatRankList, RangesAndSingles) {
  EXPECT_EQ(format_rank_list({0, 1, 2, 3, 7}), "0-3, 7");
  EXPECT_EQ(format_rank_list({0, 1}), "0-1");
  EXPECT_EQ(format_rank_list({1, 3, 5}), "1, 3, 5");
  EXPECT_EQ(format_rank_list({2, 3, 4, 10, 11, 20}), "2-4, 10-11, 20");
  EXPECT_EQ(format_rank_list({7, 100, 101, 102}), "7, 100-102");
}

TEST(FormatRankList, TruncatesWithCount) {
  std::vector<int> evens;
  for (int r = 0; r < 80; r += 2) evens.push_back(r);  // 40 ranks, no ranges
  EXPECT_EQ(format_rank_list(evens, 3), "0, 2, 4, ... (40 ranks in all)");

  std::vector<int> mixed;
  for (int r = 0; r < 10; ++r) mixed.push_back(r);
  mixed.push_back(20);
  mixed.push_back(30);
  EXPECT_EQ(format_rank_list(mixed, 2), "0-9, 20, ... (12 ranks in all)");

  // Default limit of 16 items.
  std::string text = format_rank_list(evens);
  EXPECT_NE(text.find("30, ... (40 ranks in all)"), std::string::npos) << text;
  EXPECT_EQ(text.find("32"), std::string::npos) << text;
}

TEST(FormatRankList, NoTruncationAtExactlyMaxItems) {
  EXPECT_EQ(format_rank_list({1, 3, 5}, 3), "1, 3, 5");
  std::vector<int> run;
  for (int r = 0; r < 100; ++r) run.push_back(r);
  EXPECT_EQ(format_rank_list(run, 1), "0-99");
}

}  // namespace
}  // namespace cohort
