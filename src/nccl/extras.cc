// Memory, registration, and what Cohort does not do: each such call returns ncclInvalidUsage
// and ncclGetLastError says what is missing.
#include <mutex>
#include <string>
#include <unordered_set>

#include "shim.h"

using cohort_nccl::fail;
using cohort_nccl::from_cohort;

namespace {

// ncclCommRegister handles: registration is local in NCCL (not collective), so it cannot be
// Cohort's collective cohort_mem_register; the buffer is remembered and the calls on it take
// Cohort's unregistered path, which is correct for any device buffer.
struct Registration {
  ncclComm_t comm;
  void *buffer;
  size_t size;
};

std::mutex g_regs_mutex;
std::unordered_set<Registration *> g_regs;

ncclResult_t unsupported(const char *call, const char *what) {
  return fail(ncclInvalidUsage, std::string(call) + ": " + what);
}

}  // namespace

extern "C" {

ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  if (ptr == nullptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  cohort_status_t s = cohort_device_alloc(size, ptr);
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, "ncclMemAlloc");
}

ncclResult_t ncclMemFree(void *ptr) {
  cohort_status_t s = cohort_device_free(ptr);
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, "ncclMemFree");
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclCommRegister");
  if (r != ncclSuccess) return r;
  if (handle == nullptr) return fail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  auto *reg = new Registration{comm, buff, size};
  std::lock_guard<std::mutex> lock(g_regs_mutex);
  g_regs.insert(reg);
  *handle = reg;
  return ncclSuccess;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclCommDeregister");
  if (r != ncclSuccess) return r;
  auto *reg = static_cast<Registration *>(handle);
  std::lock_guard<std::mutex> lock(g_regs_mutex);
  if (g_regs.count(reg) == 0 || reg->comm != comm) {
    return fail(ncclInvalidArgument,
                "ncclCommDeregister: handle is not a registration of this communicator");
  }
  g_regs.erase(reg);
  delete reg;
  return ncclSuccess;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void * /*buff*/, size_t /*size*/,
                                    ncclWindow_t *win, int /*winFlags*/) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclCommWindowRegister");
  if (r != ncclSuccess) return r;
  if (win != nullptr) *win = nullptr;
  return unsupported("ncclCommWindowRegister",
                     "symmetric memory windows are not supported by Cohort");
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t /*win*/) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclCommWindowDeregister");
  if (r != ncclSuccess) return r;
  return unsupported("ncclCommWindowDeregister",
                     "symmetric memory windows are not supported by Cohort (no window exists)");
}

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t * /*reqs*/,
                               ncclDevComm_t * /*outDevComm*/) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclDevCommCreate");
  if (r != ncclSuccess) return r;
  return unsupported("ncclDevCommCreate",
                     "NCCL's device API (nccl_device.h) is not supported by Cohort");
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t * /*devComm*/) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclDevCommDestroy");
  if (r != ncclSuccess) return r;
  return unsupported("ncclDevCommDestroy",
                     "NCCL's device API (nccl_device.h) is not supported by Cohort");
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t * /*op*/, void * /*scalar*/,
                                      ncclDataType_t /*datatype*/,
                                      ncclScalarResidence_t /*residence*/, ncclComm_t comm) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclRedOpCreatePreMulSum");
  if (r != ncclSuccess) return r;
  return unsupported("ncclRedOpCreatePreMulSum",
                     "pre-multiplied sums are not supported by Cohort yet (ncclAvg is)");
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  ncclResult_t r = cohort_nccl::check_comm(comm, "ncclRedOpDestroy");
  if (r != ncclSuccess) return r;
  return fail(ncclInvalidArgument, "ncclRedOpDestroy: op " + std::to_string(static_cast<int>(op)) +
                                       " was not made by ncclRedOpCreatePreMulSum");
}

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t * /*simInfo*/) {
  return unsupported("ncclGroupSimulateEnd",
                     "Cohort has no cost model to simulate a group with (the group is left "
                     "open: end it with ncclGroupEnd)");
}

void ncclResetDebugInit(void) {}  // Cohort reads NCCL_DEBUG at each use: nothing to reset

}  // extern "C"
