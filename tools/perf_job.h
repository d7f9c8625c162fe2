// Where cohort_perf runs: this rank, the job's size, its hosts, and how many ranks share the
// cores of the busiest host.  Ranks that outnumber their cores take turns on them, so the
// times measure the scheduler as much as Cohort: rank 0 warns.
#pragma once

#include <mpi.h>

#include <string>

namespace cohort::perf {

// The exit status of a run that measured nothing because what it was asked to measure is not
// there (-m cuda without a GPU, or without CUDA in the build): automake's "skipped".
constexpr int kExitSkipped = 77;

struct HostLoad {
  int hosts = 1;                 // hosts of the job (MPI shared-memory domains)
  int oversubscribed_hosts = 0;  // hosts whose ranks outnumber their cores
  // The host with the most ranks per core (the lowest rank's host among equals):
  int ranks = 1;  // its ranks
  int cores = 1;  // the cores they may run on: the union of their affinity masks
  std::string host;
  bool oversubscribed() const { return ranks > cores; }
};

struct Job {
  int rank = 0;
  int ranks = 1;
  HostLoad load;
};

// Collective over comm: every rank gets the same load.
Job job_of(MPI_Comm comm);

// Collective over comm: "" when `mine` is "" on every rank, else the text of the lowest rank
// whose `mine` is not, on every rank.  For outcomes the ranks must agree on before going on.
std::string first_error(MPI_Comm comm, const std::string &mine);

// "4 ranks share 2 cores on host H: timings and ratios are not meaningful", or "" when every
// host has a core per rank.
std::string oversubscription_warning(const HostLoad &load);

}  // namespace cohort::perf
