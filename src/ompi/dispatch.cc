#include "dispatch.h"

#include <algorithm>
#include <bit>

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
    case Fallback::kNoTeam: return "no Cohort team on this communicator";
    case Fallback::kOneRank: return "host memory on a one-rank communicator";
    case Fallback::kNoTeamYet: return "nonblocking, and no blocking call has made the team yet";
    case Fallback::kRefused: return "refused by Cohort's argument check";
    case Fallback::kReentered: return "called from inside Cohort";
  }
  return "?";
}

Placement placement(const void *const *buffers, int n, MemoryKindFn kind_of) {
  bool device = false, other = false;
  for (int i = 0; i < n; ++i) {
    cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
    if (kind_of(buffers[i], &kind) != COHORT_SUCCESS) kind = COHORT_MEMORY_HOST;
    device |= kind == COHORT_MEMORY_CUDA_DEVICE;
    other |= kind != COHORT_MEMORY_CUDA_DEVICE;
  }
  if (device && other) return Placement::kMixed;
  return device ? Placement::kDevice : Placement::kHost;
}

int RouteMemo::key(coll_cohort_kind_t kind, uint64_t bytes) {
  return static_cast<int>(kind) * kSizeClasses + std::bit_width(bytes);
}

std::optional<bool> RouteMemo::recall(int key) {
  Entry &e = entries_[key];
  if (e.left == 0) return std::nullopt;
  --e.left;
  return e.all_on_device;
}

void RouteMemo::learn(int key, bool all_on_device, bool settled) {
  Entry &e = entries_[key];
  const bool repeated = settled && e.known && e.all_on_device == all_on_device;
  e.interval = !repeated ? 0 : static_cast<uint8_t>(std::clamp(2 * e.interval, 1, kMaxSkipped));
  e.known = true;
  e.all_on_device = all_on_device;
  e.left = e.interval;
}

uint64_t uniform_bytes(const coll_cohort_args_t &args, int (*type_size)(MPI_Datatype, int *)) {
  auto bytes = [type_size](int count, MPI_Datatype type) -> uint64_t {
    int size = 0;
    if (count <= 0 || type_size(type, &size) != MPI_SUCCESS || size <= 0) return 0;
    return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
  };
  switch (args.kind) {
    case COLL_COHORT_ALLREDUCE:
    case COLL_COHORT_BCAST:
    case COLL_COHORT_REDUCE:
    case COLL_COHORT_REDUCE_SCATTER_BLOCK:
    case COLL_COHORT_SCAN:
    case COLL_COHORT_EXSCAN: return bytes(args.count, args.dtype);
    case COLL_COHORT_ALLGATHER:
    case COLL_COHORT_ALLTOALL: return bytes(args.rcount, args.rdtype);
    default: return 0;
  }
}

}  // namespace cohort::ompi
