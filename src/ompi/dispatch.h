// What the component decides per call, as data: which collective, and when it falls back to
// Open MPI's own module, why.  The memory rule is pure (the question "where does this buffer
// live" is passed in: cohort_memory_kind, or a fake in unit tests).
#pragma once

#include <optional>

#include "cohort.h"

namespace cohort::ompi {

enum class Coll {
  kAllreduce,
  kBcast,
  kReduce,
  kAllgather,
  kReduceScatterBlock,
  kAlltoall,
  kBarrier
};
constexpr int kNumColls = 7;
const char *coll_mpi_name(Coll coll);  // "MPI_Allreduce"

enum class Fallback {
  kHostBuffer,     // host memory and coll_cohort_host is off
  kMixedMemory,    // send and receive buffers in different kinds of memory
  kDatatype,       // a reduction on a type Cohort lacks (MPI_SHORT, pairs, derived)
  kOp,             // an op Cohort lacks (MPI_MAXLOC, MPI_BAND, user ops)
  kNotContiguous,  // a datatype with gaps
  kNoTeam,         // this communicator's team could not be created (warned once)
  kRefused,        // Cohort's own check refused the call before any traffic
  kReentered,      // called from inside Cohort (its own communicator setup)
  kAfterFailure,   // an earlier collective on this communicator failed in Cohort
};
constexpr int kNumFallbacks = 9;
const char *fallback_text(Fallback reason);

// Buffers a call reads or writes; nullptr for one it does not use (MPI_IN_PLACE's send side,
// a non-root's receive buffer in reduce).
struct CallBuffers {
  const void *send = nullptr;
  const void *recv = nullptr;
};

// Where a buffer lives: cohort_memory_kind (the CUDA driver, asked only on threads with a
// current CUDA context), or a fake in unit tests.
using MemoryKindFn = cohort_status_t (*)(const void *ptr, cohort_memory_kind_t *kind);

// The memory rule: device (or managed) buffers run on Cohort; host buffers, pinned ones
// included, only when `host_buffers` is on; a call mixing kinds falls back.  Sets *kind to the
// kind found, pinned host memory reported as COHORT_MEMORY_HOST; a buffer given twice is asked
// about once.
std::optional<Fallback> memory_rule(const CallBuffers &buffers, bool host_buffers,
                                    MemoryKindFn kind_of, cohort_memory_kind_t *kind);

}  // namespace cohort::ompi
