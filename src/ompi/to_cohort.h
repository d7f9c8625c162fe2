// An MPI call in Cohort's terms: element type, op and counts (data movement as bytes of any
// contiguous type), MPI_IN_PLACE in Cohort's in-place conventions, and the one MPI semantics
// Cohort lacks, in-place reduce-scatter's result at the front of the buffer, done here.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "call.h"
#include "cohort.h"
#include "dispatch.h"

namespace cohort::ompi {

class CohortCall {
 public:
  // Maps the call, or says why Cohort cannot take it (type, op, layout, sizes); `detail` then
  // holds a word on it where the reason alone does not say enough.
  std::optional<Fallback> prepare(const Call &call, const char **detail);

  // Whether Cohort must see the buffers in host memory (the in-place reduce-scatter's copy to
  // the front is the CPU's).
  bool needs_host_memory(const Call &call) const;

  // Runs (request == nullptr) or posts the call with the buffers of `args` (the call's own, or
  // their staged copies).
  cohort_status_t start(cohort_team_t team, const Call &call, const coll_cohort_args_t &args,
                        cohort_request_t *request);
  // After the call completed: the in-place reduce-scatter's result to the front.
  void finish();

 private:
  cohort_status_t start_reduction(cohort_team_t team, const Call &call,
                                  const coll_cohort_args_t &args, cohort_request_t *request);
  cohort_status_t start_blocks(cohort_team_t team, const Call &call, const coll_cohort_args_t &args,
                               cohort_request_t *request);
  cohort_status_t start_reduce_scatter(cohort_team_t team, const Call &call,
                                       const coll_cohort_args_t &args, cohort_request_t *request);
  std::optional<Fallback> prepare_blocks(const Call &call, const char **detail);

  cohort_dtype_t dtype_ = COHORT_UINT8;
  cohort_op_t op_ = COHORT_SUM;
  size_t count_ = 0;      // elements (bytes for data movement) per rank, or of a reduction
  size_t elem_ = 1;       // bytes per element of the reduction, or 1
  size_t send_elem_ = 1;  // bytes per MPI element of the send side (v-variants' units)
  size_t recv_elem_ = 1;
  std::vector<size_t> send_counts_, send_displs_, recv_counts_, recv_displs_;
  // In-place reduce-scatter off the front: the result, then where it goes.
  std::unique_ptr<char[]> result_;
  void *result_to_ = nullptr;
  size_t result_bytes_ = 0;
};

}  // namespace cohort::ompi
