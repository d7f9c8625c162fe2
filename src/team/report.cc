#include "team/report.h"

#include <algorithm>

#include "core/status.h"

namespace cohort {

cohort_phase_stats_t phase_stats(const char *name, const std::vector<int64_t> &per_rank) {
  cohort_phase_stats_t stats{name, 0, 0, 0, -1};
  if (per_rank.empty()) return stats;
  auto max_it = std::max_element(per_rank.begin(), per_rank.end());
  stats.max_ns = *max_it;
  stats.slowest_rank = static_cast<int>(max_it - per_rank.begin());
  stats.min_ns = *std::min_element(per_rank.begin(), per_rank.end());
  std::vector<int64_t> sorted = per_rank;
  size_t mid = (sorted.size() - 1) / 2;
  std::nth_element(sorted.begin(), sorted.begin() + mid, sorted.end());
  stats.median_ns = sorted[mid];
  return stats;
}

cohort_init_report_t build_init_report(const std::vector<std::vector<int64_t>> &timings,
                                       const char *const *phase_names, int num_phases) {
  cohort_init_report_t report{};
  report.num_phases = std::min(num_phases, COHORT_MAX_PHASES);
  std::vector<int64_t> column(timings.size());
  std::vector<int64_t> totals(timings.size(), 0);
  for (int p = 0; p < report.num_phases; ++p) {
    for (size_t r = 0; r < timings.size(); ++r) {
      column[r] = timings[r][p];
      totals[r] += timings[r][p];
    }
    report.phases[p] = phase_stats(phase_names[p], column);
  }
  report.total = phase_stats("total", totals);
  return report;
}

std::string format_init_report(const cohort_init_report_t &report, int team_size) {
  std::string out = strprintf("init report (%d ranks, times in ms):\n", team_size);
  out += strprintf("  %-12s %10s %10s %10s  %s\n", "phase", "min", "median", "max", "slowest rank");
  auto row = [&](const cohort_phase_stats_t &s) {
    out += strprintf("  %-12s %10.3f %10.3f %10.3f  %d\n", s.name, s.min_ns / 1e6,
                     s.median_ns / 1e6, s.max_ns / 1e6, s.slowest_rank);
  };
  for (int p = 0; p < report.num_phases; ++p) row(report.phases[p]);
  row(report.total);
  return out;
}

}  // namespace cohort
