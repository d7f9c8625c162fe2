// Unit tests for the init report statistics (src/team/report.*).
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cohort.h"
#include "team/report.h"

namespace cohort {
namespace {

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// ------------------------------------------------------------------ phase_stats

TEST(PhaseStats, OddCount) {
  const char *name = "peer-info";
  cohort_phase_stats_t s = phase_stats(name, {50, 10, 90, 30, 70});
  EXPECT_EQ(s.name, name);
  EXPECT_EQ(s.min_ns, 10);
  EXPECT_EQ(s.median_ns, 50);
  EXPECT_EQ(s.max_ns, 90);
  EXPECT_EQ(s.slowest_rank, 2);
}

TEST(PhaseStats, EvenCountTakesLowerMiddle) {
  cohort_phase_stats_t s = phase_stats("x", {40, 10, 30, 20});
  EXPECT_EQ(s.min_ns, 10);
  EXPECT_EQ(s.median_ns, 20);  // not 25 (mean of middles), not 30 (upper middle)
  EXPECT_EQ(s.max_ns, 40);
  EXPECT_EQ(s.slowest_rank, 0);

  cohort_phase_stats_t two = phase_stats("x", {8, 2});
  EXPECT_EQ(two.median_ns, 2);
  EXPECT_EQ(two.slowest_rank, 0);

  cohort_phase_stats_t six = phase_stats("x", {6, 1, 5, 2, 4, 3});
  EXPECT_EQ(six.median_ns, 3);
  EXPECT_EQ(six.slowest_rank, 0);
}

TEST(PhaseStats, SlowestRankIsFirstIndexOfMax) {
  cohort_phase_stats_t s = phase_stats("x", {3, 9, 1, 9, 9});
  EXPECT_EQ(s.max_ns, 9);
  EXPECT_EQ(s.slowest_rank, 1);
  cohort_phase_stats_t last = phase_stats("x", {1, 2, 3, 4, 100});
  EXPECT_EQ(last.slowest_rank, 4);
}

TEST(PhaseStats, AllEqual) {
  cohort_phase_stats_t s = phase_stats("x", {5, 5, 5});
  EXPECT_EQ(s.min_ns, 5);
  EXPECT_EQ(s.median_ns, 5);
  EXPECT_EQ(s.max_ns, 5);
  EXPECT_EQ(s.slowest_rank, 0);
}

TEST(PhaseStats, SingleRank) {
  cohort_phase_stats_t s = phase_stats("x", {1234});
  EXPECT_EQ(s.min_ns, 1234);
  EXPECT_EQ(s.median_ns, 1234);
  EXPECT_EQ(s.max_ns, 1234);
  EXPECT_EQ(s.slowest_rank, 0);
}

TEST(PhaseStats, EmptyInput) {
  const char *name = "ready";
  cohort_phase_stats_t s = phase_stats(name, {});
  EXPECT_EQ(s.name, name);
  EXPECT_EQ(s.min_ns, 0);
  EXPECT_EQ(s.median_ns, 0);
  EXPECT_EQ(s.max_ns, 0);
  EXPECT_EQ(s.slowest_rank, -1);
}

TEST(PhaseStats, InputNotReordered) {
  std::vector<int64_t> values = {7, 3, 5, 1};
  std::vector<int64_t> copy = values;
  phase_stats("x", values);
  EXPECT_EQ(values, copy);
}

// ------------------------------------------------------------ build_init_report

const char *const kNames[] = {"check-in", "peer-info", "local-ranks"};

TEST(BuildInitReport, PerPhaseColumnsAndTotals) {
  // timings[r][p]
  std::vector<std::vector<int64_t>> timings = {
      {10, 100, 1000},  // rank 0: total 1110
      {30, 50, 2000},   // rank 1: total 2080
      {20, 300, 500},   // rank 2: total 820
  };
  cohort_init_report_t report = build_init_report(timings, kNames, 3);
  ASSERT_EQ(report.num_phases, 3);

  EXPECT_STREQ(report.phases[0].name, "check-in");
  EXPECT_EQ(report.phases[0].min_ns, 10);
  EXPECT_EQ(report.phases[0].median_ns, 20);
  EXPECT_EQ(report.phases[0].max_ns, 30);
  EXPECT_EQ(report.phases[0].slowest_rank, 1);

  EXPECT_STREQ(report.phases[1].name, "peer-info");
  EXPECT_EQ(report.phases[1].min_ns, 50);
  EXPECT_EQ(report.phases[1].median_ns, 100);
  EXPECT_EQ(report.phases[1].max_ns, 300);
  EXPECT_EQ(report.phases[1].slowest_rank, 2);

  EXPECT_STREQ(report.phases[2].name, "local-ranks");
  EXPECT_EQ(report.phases[2].min_ns, 500);
  EXPECT_EQ(report.phases[2].median_ns, 1000);
  EXPECT_EQ(report.phases[2].max_ns, 2000);
  EXPECT_EQ(report.phases[2].slowest_rank, 1);

  // Total: stats of per-rank sums (not sums of per-phase stats: sum of maxima is 2330).
  EXPECT_STREQ(report.total.name, "total");
  EXPECT_EQ(report.total.min_ns, 820);
  EXPECT_EQ(report.total.median_ns, 1110);
  EXPECT_EQ(report.total.max_ns, 2080);
  EXPECT_EQ(report.total.slowest_rank, 1);
}

TEST(BuildInitReport, TotalSlowestRankDiffersFromEveryPhase) {
  // Rank 3 is never slowest in a phase but is slowest overall.
  std::vector<std::vector<int64_t>> timings = {{100, 0, 0}, {0, 100, 0}, {0, 0, 100}, {90, 90, 90}};
  cohort_init_report_t report = build_init_report(timings, kNames, 3);
  ASSERT_EQ(report.num_phases, 3);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(report.phases[p].slowest_rank, p);
  EXPECT_EQ(report.total.slowest_rank, 3);
  EXPECT_EQ(report.total.max_ns, 270);
  EXPECT_EQ(report.total.min_ns, 100);
  EXPECT_EQ(report.total.median_ns, 100);  // 4 ranks: lower middle of {100,100,100,270}
}

TEST(BuildInitReport, FewerPhasesThanColumnsUsesOnlyThose) {
  std::vector<std::vector<int64_t>> timings = {{1, 2, 1000}, {3, 4, 1000}};
  cohort_init_report_t report = build_init_report(timings, kNames, 2);
  EXPECT_EQ(report.num_phases, 2);
  EXPECT_EQ(report.total.max_ns, 7);
  EXPECT_EQ(report.total.min_ns, 3);
}

TEST(BuildInitReport, PhaseCountClampedToMax) {
  const int phases = COHORT_MAX_PHASES + 4;
  std::vector<const char *> names(phases, "p");
  std::vector<std::vector<int64_t>> timings(2, std::vector<int64_t>(phases, 1));
  cohort_init_report_t report = build_init_report(timings, names.data(), phases);
  EXPECT_EQ(report.num_phases, COHORT_MAX_PHASES);
  EXPECT_EQ(report.total.max_ns, COHORT_MAX_PHASES);
}

TEST(BuildInitReport, NoRanks) {
  cohort_init_report_t report = build_init_report({}, kNames, 3);
  EXPECT_EQ(report.num_phases, 3);
  EXPECT_EQ(report.phases[1].slowest_rank, -1);
  EXPECT_EQ(report.total.slowest_rank, -1);
}

// ----------------------------------------------------------- format_init_report

TEST(FormatInitReport, HasPhaseRowsAndTotalRow) {
  std::vector<std::vector<int64_t>> timings = {
      {1000000, 2000000, 3000000},
      {1500000, 2500000, 500000},
  };
  cohort_init_report_t report = build_init_report(timings, kNames, 3);
  std::string text = format_init_report(report, 2);
  EXPECT_TRUE(contains(text, "2 ranks")) << text;
  for (const char *name : kNames) EXPECT_TRUE(contains(text, name)) << text;

  std::istringstream lines(text);
  std::string line, total_line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    if (line.find("total") != std::string::npos) total_line = line;
  }
  EXPECT_EQ(count, 2 + 3 + 1);  // title, header, 3 phases, total
  ASSERT_FALSE(total_line.empty()) << text;
  // Totals: rank 0 6 ms, rank 1 4.5 ms -> min 4.5, median 4.5, max 6.0, slowest rank 0.
  EXPECT_TRUE(contains(total_line, "4.500")) << total_line;
  EXPECT_TRUE(contains(total_line, "6.000")) << total_line;
  // Phase rows come before the total row.
  EXPECT_LT(text.find("local-ranks"), text.find("total"));
}

}  // namespace
}  // namespace cohort
