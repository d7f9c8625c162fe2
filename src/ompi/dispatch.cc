#include "dispatch.h"

namespace cohort::ompi {

const char *coll_mpi_name(Coll coll) {
  switch (coll) {
    case Coll::kAllreduce: return "MPI_Allreduce";
    case Coll::kBcast: return "MPI_Bcast";
    case Coll::kReduce: return "MPI_Reduce";
    case Coll::kAllgather: return "MPI_Allgather";
    case Coll::kReduceScatterBlock: return "MPI_Reduce_scatter_block";
    case Coll::kAlltoall: return "MPI_Alltoall";
    case Coll::kBarrier: return "MPI_Barrier";
  }
  return "?";
}

const char *fallback_text(Fallback reason) {
  switch (reason) {
    case Fallback::kHostBuffer: return "host buffer (coll_cohort_host is off)";
    case Fallback::kMixedMemory: return "send and receive buffers in different memory";
    case Fallback::kDatatype: return "datatype Cohort does not reduce";
    case Fallback::kOp: return "op Cohort does not have";
    case Fallback::kNotContiguous: return "non-contiguous datatype";
    case Fallback::kNoTeam: return "no Cohort team on this communicator";
    case Fallback::kRefused: return "refused by Cohort's argument check";
    case Fallback::kReentered: return "called from inside Cohort";
    case Fallback::kAfterFailure: return "an earlier collective failed in Cohort";
  }
  return "?";
}

namespace {

// The rule tells host memory from device memory, not pinned from pageable host memory.
cohort_memory_kind_t kind_for_rule(MemoryKindFn kind_of, const void *buffer) {
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  if (kind_of(buffer, &kind) != COHORT_SUCCESS) return COHORT_MEMORY_HOST;
  return kind == COHORT_MEMORY_CUDA_HOST ? COHORT_MEMORY_HOST : kind;
}

}  // namespace

std::optional<Fallback> memory_rule(const CallBuffers &buffers, bool host_buffers,
                                    MemoryKindFn kind_of, cohort_memory_kind_t *kind) {
  std::optional<cohort_memory_kind_t> found;
  const void *recv = buffers.recv == buffers.send ? nullptr : buffers.recv;  // asked once
  for (const void *buffer : {buffers.send, recv}) {
    if (buffer == nullptr) continue;
    const cohort_memory_kind_t k = kind_for_rule(kind_of, buffer);
    if (found && *found != k) {
      *kind = *found;
      return Fallback::kMixedMemory;
    }
    found = k;
  }
  *kind = found.value_or(COHORT_MEMORY_HOST);  // no buffer (barrier, count 0): host rules
  if (*kind == COHORT_MEMORY_HOST && !host_buffers) return Fallback::kHostBuffer;
  return std::nullopt;
}

}  // namespace cohort::ompi
