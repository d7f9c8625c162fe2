// An MPI call in Cohort's terms: element type, op and counts (data movement as bytes of any
// type), MPI_IN_PLACE in Cohort's in-place conventions, and what Cohort lacks done here:
// in-place reduce-scatter's result at the front of the buffer, displacements below the
// buffer's address, and datatypes with gaps, whose sides travel packed (packing.h) so that a
// rank whose layout differs from the others' still takes part in their call.  Only the
// arguments this rank uses are read (call.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "call.h"
#include "cohort.h"
#include "dispatch.h"
#include "packing.h"
#include "staging.h"

namespace cohort::ompi {

class CohortCall {
 public:
  // Maps the call, or says why Cohort cannot take it: a reduction's type or op that Cohort
  // lacks (every rank passes the same ones), or arguments only an erroneous program passes
  // (sizes of a rank's own block that differ, a negative count); `detail` then holds a word on
  // it where the reason alone does not say enough.
  std::optional<Fallback> prepare(const Call &call, const char **detail);

  // Whether Cohort must see the buffers in host memory (the in-place reduce-scatter's copy to
  // the front is the CPU's).
  bool needs_host_memory(const Call &call) const;
  // Whether a side travels packed: it must then be in host memory when the call starts.
  bool packed(Side side) const { return side_(side).packed; }
  // Bytes of the packed sides, for the report (0: nothing packed).
  size_t packed_bytes() const;

  // Runs (request == nullptr) or posts the call with the buffers of `args` (the call's own, or
  // their staged copies), packed sides packed into blocks of `pools` at `where` (the memory the
  // call runs on).  A failure to pack returns its status before Cohort sees the call.
  cohort_status_t start(cohort_team_t team, const Call &call, const coll_cohort_args_t &args,
                        Target where, StagingPools &pools, cohort_request_t *request);
  // After the call completed: the in-place reduce-scatter's result to the front, the packed
  // sides it wrote unpacked into the buffers of `args`.
  cohort_status_t finish();

 private:
  // One side as Cohort gets it.
  struct CohortSide {
    bool used = false;
    bool packed = false;   // its datatype has gaps: Cohort gets its packed bytes
    bool written = false;  // the call writes it (unpacked after the call)
    bool v = false;        // counts per rank
    MpiBlocks blocks;      // MPI's description: one block for the collectives without v
    std::vector<size_t> bytes, displs;  // v: Cohort's counts and displacements, in bytes
    ptrdiff_t shift = 0;       // Cohort's pointer from the buffer's: the lowest displacement < 0
    void *buffer = nullptr;    // the buffer of `args` (host memory when packed)
    PooledBlock host, device;  // the packed bytes, on the host and (on the GPU) the device
    void *at = nullptr;        // what Cohort gets
  };
  CohortSide &side_(Side s) { return s == Side::kSend ? send_ : recv_; }
  const CohortSide &side_(Side s) const { return s == Side::kSend ? send_ : recv_; }

  std::optional<Fallback> prepare_reduction(const Call &call);
  std::optional<Fallback> prepare_blocks(const Call &call, const char **detail);
  std::optional<Fallback> map_side(const Call &call, Side side, const char **detail);
  cohort_status_t place(CohortSide &side, void *buffer, Target where, StagingPools &pools);
  cohort_status_t start_reduction(cohort_team_t team, const Call &call, cohort_request_t *request);
  cohort_status_t start_blocks(cohort_team_t team, const Call &call, cohort_request_t *request);
  cohort_status_t start_reduce_scatter(cohort_team_t team, const Call &call,
                                       cohort_request_t *request);

  cohort_dtype_t dtype_ = COHORT_UINT8;
  cohort_op_t op_ = COHORT_SUM;
  size_t count_ = 0;  // elements (bytes for data movement) per rank, or of a reduction
  size_t elem_ = 1;   // bytes per element of the reduction, or 1
  std::vector<size_t> recv_counts_;  // reduce_scatter: elements per rank
  CohortSide send_, recv_;
  // In-place reduce-scatter off the front: the result, then where it goes.
  std::unique_ptr<char[]> result_;
  size_t result_bytes_ = 0;
  void *result_to_ = nullptr;
};

}  // namespace cohort::ompi
