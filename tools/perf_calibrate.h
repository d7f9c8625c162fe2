// cohort_perf --calibrate FILE: the selection table, measured on this machine.  For each
// collective of -c, every algorithm that runs on the sweep's memory (and, where it splits its
// buffer, on 1 and 2 channels) is forced through COHORT_COLL_ALGO on a team of its own and swept
// over the sizes out of place; per size the fastest wins, a change of winner taking effect only
// where the new one is more than 5% faster (noise does not split ranges).  Rank 0 writes the
// rules as a tuning file (coll/select.h: ranks= and hosts= as measured, us= the winner's times;
// every candidate's times as comments), reads it back, and prints where to point
// COHORT_TUNING_FILE.
#pragma once

#include "perf_job.h"
#include "perf_sweep.h"

namespace cohort::perf {

// The exit status: 0, 1 when a sweep or the file failed, kExitSkipped as run_sweep.
int run_calibrate(const SweepOptions &opt, const Job &job);

}  // namespace cohort::perf
