// cohort_perf: Cohort's benchmark, in two modes.
// --team-create (the default): team creation and destruction, timed (perf_team.h).
// -c LIST: the collective sweep, nccl-tests' tables for Cohort's collectives on host or GPU
// memory, optionally validated and timed against MPI or NCCL (perf_sweep.h).
// --calibrate FILE: sweeps of every algorithm, the fastest per size written as a tuning file
// (perf_calibrate.h).
// The command line: perf_options.h.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "perf_calibrate.h"
#include "perf_job.h"
#include "perf_options.h"
#include "perf_sweep.h"
#include "perf_team.h"
#include "tool_version.h"

int main(int argc, char **argv) {
  if (cohort::tools::asks_version(argc, argv)) {  // before MPI_Init: needs no MPI job
    cohort::tools::print_version("cohort_perf");
    return 0;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  cohort::perf::Options opt;
  std::string error;
  bool ok = cohort::perf::parse_options(argc, argv, &opt, &error);
  if (ok && !opt.team_create && opt.sweep.root >= size) {
    error = "-r " + std::to_string(opt.sweep.root) + ": the root must be below the rank count (" +
            std::to_string(size) + ")";
    ok = false;
  }
  if (!ok) {
    if (rank == 0) fprintf(stderr, "cohort_perf: %s (--help for usage)\n", error.c_str());
    MPI_Finalize();
    return 1;
  }
  const cohort::perf::Job job = cohort::perf::job_of(MPI_COMM_WORLD);
  const std::string warning = cohort::perf::oversubscription_warning(job.load);
  if (rank == 0 && !warning.empty()) fprintf(stderr, "cohort_perf: warning: %s\n", warning.c_str());
  int rc = opt.team_create                ? cohort::perf::run_team_create(opt.team, job)
           : !opt.sweep.calibrate.empty() ? cohort::perf::run_calibrate(opt.sweep, job)
                                          : cohort::perf::run_sweep(opt.sweep, job);
  MPI_Finalize();
  return rc;
}
