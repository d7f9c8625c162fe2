// What the component decides per call, as data: which collective, and when it falls back to
// Open MPI's own module, why.  The memory rule is pure (the detector is passed in), so unit
// tests drive it with an injected detector.
#pragma once

#include <optional>

#include "cohort.h"
#include "ompi/memory_type.h"

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

// The memory rule: device (or managed) buffers run on Cohort; host buffers only when
// `host_buffers` is on; a call mixing kinds falls back.  Sets *type to the kind found.
std::optional<Fallback> memory_rule(const CallBuffers &buffers, bool host_buffers,
                                    MemoryTypeDetector &detector, MemoryType *type);

// The GPU a communicator's team binds: the calling thread's current one when the application
// uses a GPU (COHORT_DEVICE_CURRENT), none otherwise (a host-only team: a CPU-only program on
// a GPU node must not bind every rank to GPU 0).
int team_cuda_device(MemoryTypeDetector &detector);

}  // namespace cohort::ompi
