#include "ompi/dispatch.h"

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

std::optional<Fallback> memory_rule(const CallBuffers &buffers, bool host_buffers,
                                    MemoryTypeDetector &detector, MemoryType *type) {
  std::optional<MemoryType> found;
  const void *recv = buffers.recv == buffers.send ? nullptr : buffers.recv;  // asked once
  for (const void *buffer : {buffers.send, recv}) {
    if (buffer == nullptr) continue;
    MemoryType t = detector.of(buffer);
    if (found && *found != t) {
      *type = *found;
      return Fallback::kMixedMemory;
    }
    found = t;
  }
  *type = found.value_or(MemoryType::kHost);  // no buffer (barrier, count 0): host rules
  if (*type == MemoryType::kHost && !host_buffers) return Fallback::kHostBuffer;
  return std::nullopt;
}

int team_cuda_device(MemoryTypeDetector &detector) {
  return detector.thread_uses_gpu() ? COHORT_DEVICE_CURRENT : COHORT_DEVICE_NONE;
}

}  // namespace cohort::ompi
