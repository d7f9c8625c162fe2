// Errors, versions, type and op mappings, and the registry of live communicators.
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>

#include "shim.h"

namespace cohort_nccl {
namespace {

thread_local std::string t_last_error;

std::mutex g_comms_mutex;
std::unordered_set<ncclComm_t> g_comms;

const char *type_name(ncclDataType_t type) {
  switch (type) {
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return "this type";
  }
}

}  // namespace

ncclResult_t fail(ncclResult_t result, const std::string &why) {
  t_last_error = "Cohort: " + why;
  return result;
}

ncclResult_t from_cohort(cohort_status_t status, const char *call) {
  ncclResult_t result = ncclInternalError;
  switch (status) {
    case COHORT_SUCCESS: return ncclSuccess;
    case COHORT_IN_PROGRESS: return ncclInProgress;
    case COHORT_ERR_INVALID_ARG: result = ncclInvalidArgument; break;
    case COHORT_ERR_INVALID_USAGE:
    case COHORT_ERR_NOT_SUPPORTED: result = ncclInvalidUsage; break;
    case COHORT_ERR_NO_MEMORY:
    case COHORT_ERR_SYSTEM: result = ncclSystemError; break;
    case COHORT_ERR_CUDA: result = ncclUnhandledCudaError; break;
    // A peer that never came, failed or aborted: NCCL 2.28 has no timeout code.
    case COHORT_ERR_TIMEOUT:
    case COHORT_ERR_ABORTED: result = ncclRemoteError; break;
    default: result = ncclInternalError;
  }
  return fail(result, std::string(call) + ": " + cohort_status_string(status) + ": " +
                          cohort_last_error());
}

void comm_register(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  g_comms.insert(comm);
}

void comm_forget(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  g_comms.erase(comm);
}

ncclResult_t check_comm(ncclComm_t comm, const char *call) {
  if (comm == nullptr) return fail(ncclInvalidArgument, std::string(call) + ": comm is NULL");
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  if (g_comms.count(comm) == 0) {
    return fail(ncclInvalidArgument,
                std::string(call) + ": comm is not a live communicator (destroyed, or not made "
                                    "by this library)");
  }
  return ncclSuccess;
}

ncclResult_t ready_comm(ncclComm_t comm, const char *call) {
  ncclResult_t r = check_comm(comm, call);
  if (r != ncclSuccess) return r;
  if (comm->revoked) {
    return fail(ncclInvalidUsage, std::string(call) + ": the communicator was revoked "
                                                      "(ncclCommRevoke): destroy it");
  }
  if (comm->ready) return ncclSuccess;
  if (comm->blocking) drive_creation(comm);  // a blocking comm is ready or failed already
  int result = comm->init_result;
  if (result == ncclInProgress) {
    return fail(ncclInvalidUsage,
                std::string(call) + ": the communicator is still being created (nonblocking): "
                                    "poll ncclCommGetAsyncError until it returns ncclSuccess");
  }
  if (result != ncclSuccess) {
    return fail(static_cast<ncclResult_t>(result),
                std::string(call) + ": the communicator's creation failed");
  }
  return ncclSuccess;
}

ncclResult_t reduce_type(ncclDataType_t type, const char *call, cohort_dtype_t *out) {
  switch (type) {
    case ncclInt8: *out = COHORT_INT8; return ncclSuccess;
    case ncclUint8: *out = COHORT_UINT8; return ncclSuccess;
    case ncclInt32: *out = COHORT_INT32; return ncclSuccess;
    case ncclUint32: *out = COHORT_UINT32; return ncclSuccess;
    case ncclInt64: *out = COHORT_INT64; return ncclSuccess;
    case ncclUint64: *out = COHORT_UINT64; return ncclSuccess;
    case ncclFloat16: *out = COHORT_FLOAT16; return ncclSuccess;
    case ncclFloat32: *out = COHORT_FLOAT32; return ncclSuccess;
    case ncclFloat64: *out = COHORT_FLOAT64; return ncclSuccess;
    case ncclBfloat16: *out = COHORT_BFLOAT16; return ncclSuccess;
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return fail(ncclInvalidArgument, std::string(call) + ": Cohort does not reduce " +
                                           type_name(type) + " (fp8) yet");
    default:
      return fail(ncclInvalidArgument,
                  std::string(call) + ": datatype " + std::to_string(static_cast<int>(type)) +
                      " is not an ncclDataType_t");
  }
}

ncclResult_t move_type(ncclDataType_t type, const char *call, cohort_dtype_t *out) {
  if (type == ncclFloat8e4m3 || type == ncclFloat8e5m2) {
    *out = COHORT_UINT8;  // moved, never reduced: its bytes are all that matters
    return ncclSuccess;
  }
  return reduce_type(type, call, out);
}

ncclResult_t reduce_op(ncclRedOp_t op, const char *call, cohort_op_t *out) {
  switch (op) {
    case ncclSum: *out = COHORT_SUM; return ncclSuccess;
    case ncclProd: *out = COHORT_PROD; return ncclSuccess;
    case ncclMax: *out = COHORT_MAX; return ncclSuccess;
    case ncclMin: *out = COHORT_MIN; return ncclSuccess;
    case ncclAvg: *out = COHORT_AVG; return ncclSuccess;
    default:
      return fail(ncclInvalidArgument,
                  std::string(call) + ": op " + std::to_string(static_cast<int>(op)) +
                      " is not a reduction this library made (ncclRedOpCreatePreMulSum is not "
                      "supported by Cohort yet)");
  }
}

bool debug_info() {
  const char *level = getenv("NCCL_DEBUG");
  return level != nullptr && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0 ||
                              strcasecmp(level, "VERSION") == 0);
}

}  // namespace cohort_nccl

using cohort_nccl::fail;

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = cohort_nccl::kApiVersion;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to Cohort";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t /*comm*/) { return cohort_nccl::t_last_error.c_str(); }

}  // extern "C"
