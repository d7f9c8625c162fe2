// cohort_perf --team-create (the default mode): every iteration creates a team on
// MPI_COMM_WORLD and destroys it, timed on every rank; the iteration's time is the slowest
// rank's.  Rank 0 prints the first team, then min / median / max of creation, destruction and
// each creation phase.  With -m cuda every rank first binds its GPU (perf_cuda.h); with
// --vs-nccl, NCCL's communicator creation (ncclGetUniqueId + ncclCommInitRank) is timed after
// Cohort's teams, the first one and the median, against Cohort's.  With -m cuda, one more team
// (and NCCL communicator) gives the device memory it takes by its first allreduce.
#pragma once

#include <string>

#include "perf_job.h"

namespace cohort::perf {

struct TeamCreateOptions {
  int iterations = 20;
  int warmup = 2;
  bool host_only = false;  // create host-only teams (bind no GPU)
  bool cuda = false;       // -m cuda: bind each rank's GPU (and its context) first
  bool vs_nccl = false;    // --vs-nccl (implies cuda)
  std::string json;        // rank 0 writes the results here when set
};

// Runs on every rank; returns the exit status (1 when a team call failed or the JSON file
// could not be written, kExitSkipped when -m cuda finds no GPU).
int run_team_create(const TeamCreateOptions &opt, const Job &job);

}  // namespace cohort::perf
