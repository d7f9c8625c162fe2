// cohort_perf --team-create (the default mode): every iteration creates a team on
// MPI_COMM_WORLD and destroys it, timed on every rank; the iteration's time is the slowest
// rank's.  Rank 0 prints the first team, then min / median / max of creation, destruction and
// each creation phase.
#pragma once

#include <string>

#include "perf_job.h"

namespace cohort::perf {

struct TeamCreateOptions {
  int iterations = 20;
  int warmup = 2;
  bool host_only = false;  // create host-only teams (bind no GPU)
  std::string json;        // rank 0 writes the results here when set
};

// Runs on every rank; returns the exit status (1 when a team call failed or the JSON file
// could not be written).
int run_team_create(const TeamCreateOptions &opt, const Job &job);

}  // namespace cohort::perf
