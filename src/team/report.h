// Init report statistics: per phase, min / median / max across ranks and the slowest rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort.h"

namespace cohort {

// per_rank[r] = time rank r spent.  The median of an even count is the lower middle value.
cohort_phase_stats_t phase_stats(const char *name, const std::vector<int64_t> &per_rank);

// timings[r][p] = ns rank r spent in phase p (p < num_phases).
cohort_init_report_t build_init_report(const std::vector<std::vector<int64_t>> &timings,
                                       const char *const *phase_names, int num_phases);

// The table printed at COHORT_DEBUG=INFO.
std::string format_init_report(const cohort_init_report_t &report, int team_size);

}  // namespace cohort
