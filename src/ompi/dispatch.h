// What the component decides per call, as data: which collective, and when it falls back to
// Open MPI's own module, why.  The memory rule is pure (the question "where does this buffer
// live" is passed in: cohort_memory_kind, or a fake in unit tests).
#pragma once

#include <optional>

#include "coll_cohort.h"
#include "cohort.h"

namespace cohort::ompi {

// "MPI_Allreduce", or "MPI_Iallreduce" for the nonblocking form.
const char *coll_mpi_name(coll_cohort_kind_t kind, bool nonblocking);

enum class Fallback {
  kHostBuffer,     // host memory and coll_cohort_host is off
  kDatatype,       // a reduction on a type Cohort lacks (MPI_SHORT, pairs, derived)
  kOp,             // an op Cohort lacks (MPI_MAXLOC, MPI_BAND, user ops)
  kNotContiguous,  // a datatype with gaps
  kNoTeam,         // this communicator's team could not be created (warned once)
  kNoTeamYet,      // nonblocking before any blocking call made the team
  kOneRank,        // host memory on a one-rank communicator: Open MPI's self module copies
  kRefused,        // Cohort's own check refused the call before any traffic
  kReentered,      // called from inside Cohort (its own communicator setup)
  kAfterFailure,   // an earlier collective on this communicator failed in Cohort
};
constexpr int kNumFallbacks = 10;
const char *fallback_text(Fallback reason);

// Where a buffer lives: cohort_memory_kind (the CUDA driver, asked only on threads with a
// current CUDA context), or a fake in unit tests.
using MemoryKindFn = cohort_status_t (*)(const void *ptr, cohort_memory_kind_t *kind);

// Where one rank's buffers of a call live, for the route: all in host memory (pinned
// included, and calls with no buffer), all on the GPU (device or managed memory), or a mix of
// device memory with host memory, which only the host can serve (after staging).
enum class Placement { kHost, kDevice, kMixed };
Placement placement(const void *const *buffers, int n, MemoryKindFn kind_of);

}  // namespace cohort::ompi
