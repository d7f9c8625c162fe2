// Collectives, send/recv and groups: each maps onto Cohort's stream-ordered call.  Gather and
// scatter, which Cohort has no stream-ordered form of, are groups of sends and receives.
#include <cstdint>

#include "shim.h"

using cohort_nccl::fail;
using cohort_nccl::from_cohort;

namespace {

// The common checks of a collective on `comm`, then the Cohort call's result.
template <typename Call>
ncclResult_t run(const char *name, ncclComm_t comm, Call &&call) {
  ncclResult_t r = cohort_nccl::ready_comm(comm, name);
  if (r != ncclSuccess) return r;
  cohort_status_t s = call();
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, name);
}

// A data-movement call: the type mapped (fp8 as bytes), then `call(type)`.
template <typename Call>
ncclResult_t moving(const char *name, ncclDataType_t datatype, ncclComm_t comm, Call &&call) {
  cohort_dtype_t type;
  ncclResult_t r = cohort_nccl::move_type(datatype, name, &type);
  if (r != ncclSuccess) return r;
  return run(name, comm, [&] { return call(type); });
}

// A reduction: the type and op mapped, then `call(type, op)`.
template <typename Call>
ncclResult_t reducing(const char *name, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                      Call &&call) {
  cohort_dtype_t type;
  cohort_op_t cop;
  ncclResult_t r = cohort_nccl::reduce_type(datatype, name, &type);
  if (r == ncclSuccess) r = cohort_nccl::reduce_op(op, name, &cop);
  if (r != ncclSuccess) return r;
  return run(name, comm, [&] { return call(type, cop); });
}

size_t type_bytes(cohort_dtype_t type) {
  switch (type) {
    case COHORT_INT8:
    case COHORT_UINT8: return 1;
    case COHORT_FLOAT16:
    case COHORT_BFLOAT16: return 2;
    case COHORT_INT32:
    case COHORT_UINT32:
    case COHORT_FLOAT32: return 4;
    default: return 8;
  }
}

// Gather (to_root) or scatter as one group of sends and receives on the stream.
ncclResult_t rooted(const char *name, const void *sendbuff, void *recvbuff, size_t count,
                    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                    bool to_root) {
  cohort_dtype_t type;
  ncclResult_t r = cohort_nccl::move_type(datatype, name, &type);
  if (r != ncclSuccess) return r;
  r = cohort_nccl::ready_comm(comm, name);
  if (r != ncclSuccess) return r;
  if (root < 0 || root >= comm->size) {
    return fail(ncclInvalidArgument, std::string(name) + ": root " + std::to_string(root) +
                                         " is not in 0.." + std::to_string(comm->size - 1));
  }
  const size_t block = count * type_bytes(type);
  // A rank's send to itself must come before the receive from itself: gather sends first,
  // scatter's root posts its sends first.
  cohort_group_start();
  if (to_root) cohort_send_stream(comm->team, sendbuff, count, type, root, stream);
  for (int p = 0; comm->rank == root && p < comm->size; ++p) {
    if (to_root) {
      cohort_recv_stream(comm->team, static_cast<char *>(recvbuff) + p * block, count, type, p,
                         stream);
    } else {
      cohort_send_stream(comm->team, static_cast<const char *>(sendbuff) + p * block, count, type,
                         p, stream);
    }
  }
  if (!to_root) cohort_recv_stream(comm->team, recvbuff, count, type, root, stream);
  cohort_status_t s = cohort_group_end();
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, name);
}

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return reducing("ncclAllReduce", datatype, op, comm, [&](cohort_dtype_t t, cohort_op_t o) {
    return cohort_allreduce_stream(comm->team, sendbuff, recvbuff, count, t, o, stream);
  });
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return reducing("ncclReduce", datatype, op, comm, [&](cohort_dtype_t t, cohort_op_t o) {
    return cohort_reduce_stream(comm->team, sendbuff, recvbuff, count, t, o, root, stream);
  });
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return reducing("ncclReduceScatter", datatype, op, comm, [&](cohort_dtype_t t, cohort_op_t o) {
    return cohort_reduce_scatter_stream(comm->team, sendbuff, recvbuff, recvcount, t, o, stream);
  });
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return moving("ncclAllGather", datatype, comm, [&](cohort_dtype_t t) {
    return cohort_allgather_stream(comm->team, sendbuff, recvbuff, sendcount, t, stream);
  });
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return moving("ncclBroadcast", datatype, comm, [&](cohort_dtype_t t) {
    return cohort_broadcast_stream(comm->team, sendbuff, recvbuff, count, t, root, stream);
  });
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return moving("ncclAlltoAll", datatype, comm, [&](cohort_dtype_t t) {
    return cohort_alltoall_stream(comm->team, sendbuff, recvbuff, count, t, stream);
  });
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return rooted("ncclGather", sendbuff, recvbuff, count, datatype, root, comm, stream, true);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream) {
  return rooted("ncclScatter", sendbuff, recvbuff, count, datatype, root, comm, stream, false);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return moving("ncclSend", datatype, comm, [&](cohort_dtype_t t) {
    return cohort_send_stream(comm->team, sendbuff, count, t, peer, stream);
  });
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return moving("ncclRecv", datatype, comm, [&](cohort_dtype_t t) {
    return cohort_recv_stream(comm->team, recvbuff, count, t, peer, stream);
  });
}

// Send/recv between start and end run together at the outermost end (Cohort's groups);
// collectives in a group are enqueued at once, which NCCL's ordering rules allow.
ncclResult_t ncclGroupStart(void) {
  cohort_status_t s = cohort_group_start();
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, "ncclGroupStart");
}

ncclResult_t ncclGroupEnd(void) {
  cohort_status_t s = cohort_group_end();
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, "ncclGroupEnd");
}

}  // extern "C"
