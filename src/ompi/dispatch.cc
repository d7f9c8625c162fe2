#include "dispatch.h"

namespace cohort::ompi {

const char *coll_mpi_name(coll_cohort_kind_t kind, bool nonblocking) {
  static const char *const kNames[][2] = {
      {"MPI_Allreduce", "MPI_Iallreduce"},
      {"MPI_Bcast", "MPI_Ibcast"},
      {"MPI_Reduce", "MPI_Ireduce"},
      {"MPI_Allgather", "MPI_Iallgather"},
      {"MPI_Allgatherv", "MPI_Iallgatherv"},
      {"MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block"},
      {"MPI_Reduce_scatter", "MPI_Ireduce_scatter"},
      {"MPI_Alltoall", "MPI_Ialltoall"},
      {"MPI_Alltoallv", "MPI_Ialltoallv"},
      {"MPI_Barrier", "MPI_Ibarrier"},
      {"MPI_Gather", "MPI_Igather"},
      {"MPI_Gatherv", "MPI_Igatherv"},
      {"MPI_Scatter", "MPI_Iscatter"},
      {"MPI_Scatterv", "MPI_Iscatterv"},
      {"MPI_Scan", "MPI_Iscan"},
      {"MPI_Exscan", "MPI_Iexscan"},
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == COLL_COHORT_NUM_KINDS);
  if (kind < 0 || kind >= COLL_COHORT_NUM_KINDS) return "?";
  return kNames[kind][nonblocking ? 1 : 0];
}

const char *fallback_text(Fallback reason) {
  switch (reason) {
    case Fallback::kHostBuffer: return "host buffer (coll_cohort_host is off)";
    case Fallback::kDatatype: return "datatype Cohort does not reduce";
    case Fallback::kOp: return "op Cohort does not have";
    case Fallback::kNotContiguous: return "non-contiguous datatype";
    case Fallback::kNoTeam: return "no Cohort team on this communicator";
    case Fallback::kOneRank: return "host memory on a one-rank communicator";
    case Fallback::kNoTeamYet: return "nonblocking, and no blocking call has made the team yet";
    case Fallback::kRefused: return "refused by Cohort's argument check";
    case Fallback::kReentered: return "called from inside Cohort";
    case Fallback::kAfterFailure: return "an earlier collective failed in Cohort";
  }
  return "?";
}

Placement placement(const void *const *buffers, int n, MemoryKindFn kind_of) {
  bool device = false, gpu = false, host = false;
  for (int i = 0; i < n; ++i) {
    cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
    if (kind_of(buffers[i], &kind) != COHORT_SUCCESS) kind = COHORT_MEMORY_HOST;
    device |= kind == COHORT_MEMORY_CUDA_DEVICE;
    gpu |= kind == COHORT_MEMORY_CUDA_DEVICE || kind == COHORT_MEMORY_CUDA_MANAGED;
    host |= kind == COHORT_MEMORY_HOST || kind == COHORT_MEMORY_CUDA_HOST;
  }
  if (device && host) return Placement::kMixed;
  return gpu && !host ? Placement::kDevice : Placement::kHost;
}

}  // namespace cohort::ompi
