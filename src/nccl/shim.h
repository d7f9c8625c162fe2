// NCCL's API on Cohort (libnccl.so.2): what the entry points share.  A communicator is a
// Cohort team made from a unique id (cohort_team_create_unique_id) or split from another; the
// calls map one to one onto Cohort's public C API, and what Cohort does not do returns
// ncclInvalidUsage with ncclGetLastError saying so, never a wrong result.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "cohort.h"
// The code builds with hidden visibility; NCCL's entry points are the library's interface.
#pragma GCC visibility push(default)
#include "nccl.h"
#pragma GCC visibility pop

struct ncclComm {
  cohort_team_t team = nullptr;
  int size = 0;
  int rank = 0;
  int device = -1;
  bool blocking = true;
  std::string name;
  std::mutex init_mutex;                 // one thread drives a nonblocking creation at a time
  std::atomic<bool> ready{false};        // creation ended well
  std::atomic<int> init_result{ncclInProgress};  // the creation's outcome once it ended
  std::atomic<bool> revoked{false};
};

namespace cohort_nccl {

// The NCCL version whose API this library implements (ncclGetVersion).
inline constexpr int kApiVersion = NCCL_VERSION(2, 28, 9);

// Records the error this thread's ncclGetLastError returns, and hands back `result`.
ncclResult_t fail(ncclResult_t result, const std::string &why);
// The NCCL result of a Cohort status; an error also records Cohort's message for the call.
ncclResult_t from_cohort(cohort_status_t status, const char *call);

// Whether `comm` is a live communicator made by this library (else the error says so).
ncclResult_t check_comm(ncclComm_t comm, const char *call);
// check_comm, and the communicator's creation has ended well (a nonblocking one's may still run).
ncclResult_t ready_comm(ncclComm_t comm, const char *call);
void comm_register(ncclComm_t comm);
void comm_forget(ncclComm_t comm);

// Element types: reductions take the types Cohort reduces; data movement takes any (fp8 moves
// as bytes).  The error names the type and the call.
ncclResult_t reduce_type(ncclDataType_t type, const char *call, cohort_dtype_t *out);
ncclResult_t move_type(ncclDataType_t type, const char *call, cohort_dtype_t *out);
ncclResult_t reduce_op(ncclRedOp_t op, const char *call, cohort_op_t *out);

// A config as NCCL checks it (NULL: the defaults); fills what Cohort uses of it.
ncclResult_t read_config(const ncclConfig_t *config, bool *blocking, std::string *name);
// Creates rank `rank` of `size` from `id`, blocking or not, on `device` (an ordinal, or
// COHORT_DEVICE_CURRENT: the calling thread's current device, as NCCL binds it).
ncclResult_t create_comm(ncclComm_t *out, const cohort_unique_id_t &id, int size, int rank,
                         bool blocking, const std::string &name, const char *call,
                         int device = COHORT_DEVICE_CURRENT);
// Drives a nonblocking creation one step (if no other thread does); the result so far.
ncclResult_t drive_creation(ncclComm_t comm);

// Whether NCCL_DEBUG asks for INFO lines (the version line at init, as NCCL prints it).
bool debug_info();

}  // namespace cohort_nccl
