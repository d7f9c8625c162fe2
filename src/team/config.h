// A team's settings: the caller's cohort_team_config_t resolved against COHORT_* variables.
#pragma once

#include <string>

#include "cohort.h"
#include "core/status.h"
#include "team/phase.h"

namespace cohort {

struct InjectedFailure {
  bool active = false;
  Phase phase = Phase::kCheckIn;
  int rank = -1;
  bool stall = false;  // stall past the timeout instead of failing
  bool skew = false;   // align: report a different plan hash instead of failing
};

struct TeamConfig {
  double init_timeout_s = 300;
  int cuda_device = COHORT_DEVICE_CURRENT;
  bool allow_shared_gpu = false;
  std::string name = "team";
  InjectedFailure inject;
};

// Checks `config` (NULL: all defaults) and the environment.  On error *out still holds a
// usable timeout, so the rank can take part in check-in and let every rank fail alike.
Status resolve_config(const cohort_team_config_t *config, TeamConfig *out);

// Parses COHORT_INJECT_FAILURE's "PHASE:RANK[:stall|:skew]" (skew only in align).
Status parse_injected_failure(const std::string &text, InjectedFailure *out);

}  // namespace cohort
