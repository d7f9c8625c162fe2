// What the component decides per call, as data: which collective, and when it falls back to
// Open MPI's own module, why.  The memory rule is pure (the question "where does this buffer
// live" is passed in: cohort_memory_kind, or a fake in unit tests).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "coll_cohort.h"
#include "cohort.h"

namespace cohort::ompi {

// "MPI_Allreduce", or "MPI_Iallreduce" for the nonblocking form.
const char *coll_mpi_name(coll_cohort_kind_t kind, bool nonblocking);

// Why a call runs on Open MPI's module.  Each is decided alike on every rank of a correct
// program: by parameters, by the team (whose creation ends alike everywhere), by what MPI
// requires to match across ranks (a reduction's type and op), or by Cohort's own argument
// checks (alike for matching arguments).  Nothing that may differ between ranks, a datatype's
// layout or a displacement's sign, sends a call back: such differences are absorbed (packing,
// rebased displacements) so that a rank never leaves the others' route.
enum class Fallback {
  kHostBuffer,  // host memory and coll_cohort_host is off
  kDatatype,    // a reduction on a type Cohort lacks (MPI_SHORT, pairs, mixed structs)
  kOp,          // an op Cohort lacks (MPI_MAXLOC, MPI_BAND, user ops)
  kNoTeam,      // this communicator's team could not be created (warned once)
  kNoTeamYet,   // nonblocking before any blocking call made the team
  kOneRank,     // host memory on a one-rank communicator: Open MPI's self module copies
  kRefused,     // Cohort's own check refused the call before any traffic
  kReentered,   // called from inside Cohort (its own communicator setup)
};
constexpr int kNumFallbacks = 8;
const char *fallback_text(Fallback reason);

// Where a buffer lives: cohort_memory_kind (the CUDA driver, asked only on threads with a
// current CUDA context), or a fake in unit tests.
using MemoryKindFn = cohort_status_t (*)(const void *ptr, cohort_memory_kind_t *kind);

// Where one rank's buffers of a call live, for the route: all in host memory (pinned and
// managed included: the CPU reads them, and Cohort runs its host algorithms on them; calls with
// no buffer too), all in GPU device memory, or a mix of device memory with other memory, which
// only the host can serve (after staging).
enum class Placement { kHost, kDevice, kMixed };
Placement placement(const void *const *buffers, int n, MemoryKindFn kind_of);

// The route of a communicator's blocking calls with buffers (all ranks' buffers on the GPU, or
// not), remembered per collective and size class so that the ranks agree on it now and then
// instead of at every call.  Every rank keeps the same memo: it changes only with calls every
// rank makes in the same order and with outcomes every rank learns alike.  After an agreement
// that repeats the last one for its key, the next 1, 2, 4, ... up to kMaxSkipped calls of that
// key take the remembered route without asking; a different outcome asks again at the next
// call.  A rank whose buffers are not where the remembered route wants them stages them there,
// so a skipped agreement costs a copy, never a wrong result or a hang.
class RouteMemo {
 public:
  static constexpr int kMaxSkipped = 64;
  static constexpr int kSizeClasses = 65;  // bit width of the byte count: 0 .. 64

  // The key of a call: its collective and the class of its byte count (a count every rank
  // passes alike: 0 for the collectives whose counts differ between ranks).
  static int key(coll_cohort_kind_t kind, uint64_t bytes);
  // The remembered route (true: on the GPU) when this call may skip the agreement.
  std::optional<bool> recall(int key);
  // The outcome of the agreement made for a call of `key`; `settled` false (the registration
  // cache synced there) counts as a changed outcome: the next call asks again.
  void learn(int key, bool all_on_device, bool settled = true);

 private:
  struct Entry {
    bool known = false;
    bool all_on_device = false;
    uint8_t interval = 0;  // calls skipped after each agreement (0: none)
    uint8_t left = 0;      // still to skip
  };
  std::array<Entry, COLL_COHORT_NUM_KINDS * kSizeClasses> entries_{};
};

// The byte count of a call that every rank passes alike: the reductions' and bcast's count,
// allgather's and alltoall's block (the receive side: in place, the send side is not given);
// 0 for the collectives whose counts may differ between ranks (v-variants, gather, scatter)
// and for barrier.  `type_size`: MPI_Type_size, or a fake in unit tests.
uint64_t uniform_bytes(const coll_cohort_args_t &args, int (*type_size)(MPI_Datatype, int *));

}  // namespace cohort::ompi
