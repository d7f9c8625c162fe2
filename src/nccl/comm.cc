// Communicators: unique ids, creation (blocking and not), queries, the end of a communicator.
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "shim.h"

namespace cohort_nccl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

// Whether the caller's config reaches `field` (older headers have shorter configs).
bool config_has(const ncclConfig_t *config, size_t field_end) { return config->size >= field_end; }

void print_version_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!debug_info()) return;
    fprintf(stderr, "NCCL version %d.%d.%d API, implemented by Cohort %d (libnccl.so.2 of Cohort)\n",
            NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, cohort_version());
  });
}

}  // namespace

ncclResult_t read_config(const ncclConfig_t *config, bool *blocking, std::string *name) {
  *blocking = true;
  name->clear();
  if (config == nullptr) return ncclSuccess;
  if (config->magic != kConfigMagic) {
    char magic[16];
    snprintf(magic, sizeof(magic), "0x%x", config->magic);
    return fail(ncclInvalidArgument, std::string("config: magic ") + magic +
                                         " is not NCCL's: initialise the config with "
                                         "NCCL_CONFIG_INITIALIZER");
  }
  if (config->version < NCCL_VERSION(2, 14, 0) || config->size < offsetof(ncclConfig_t, netName)) {
    return fail(ncclInvalidArgument,
                "config: version " + std::to_string(config->version) + ", size " +
                    std::to_string(config->size) +
                    ": not a config of NCCL 2.14 or later (initialise it with "
                    "NCCL_CONFIG_INITIALIZER)");
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1) {
      return fail(ncclInvalidArgument,
                  "config: blocking=" + std::to_string(config->blocking) + ": give 0 or 1");
    }
    *blocking = config->blocking == 1;
  }
  if (config_has(config, offsetof(ncclConfig_t, commName) + sizeof(const char *)) &&
      config->commName != nullptr) {
    *name = config->commName;
  }
  // cgaClusterSize, CTA counts, netName, splitShare, trafficClass, collnet, NVLS and
  // scheduling hints tune NCCL's own kernels and transports: Cohort chooses its own.
  return ncclSuccess;
}

ncclResult_t create_comm(ncclComm_t *out, const cohort_unique_id_t &id, int size, int rank,
                         bool blocking, const std::string &name, const char *call, int device) {
  print_version_once();
  auto comm = std::make_unique<ncclComm>();
  comm->size = size;
  comm->rank = rank;
  comm->blocking = blocking;
  comm->name = name.empty() ? "nccl" : name;
  cohort_team_config_t config = COHORT_TEAM_CONFIG_INITIALIZER;
  config.cuda_device = device;
  config.name = comm->name.c_str();
  cohort_status_t s =
      blocking ? cohort_team_create_unique_id(&id, size, rank, &config, &comm->team)
               : cohort_team_create_unique_id_post(&id, size, rank, &config, &comm->team);
  if (s != COHORT_SUCCESS) {
    ncclResult_t r = from_cohort(s, call);
    if (comm->team != nullptr) cohort_team_destroy(comm->team);
    return r;
  }
  if (blocking) {
    cohort_team_cuda_device(comm->team, &comm->device);
    comm->ready = true;
    comm->init_result = ncclSuccess;
  }
  *out = comm.release();
  comm_register(*out);
  return blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t drive_creation(ncclComm_t comm) {
  if (comm->ready) return ncclSuccess;
  std::unique_lock<std::mutex> lock(comm->init_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return static_cast<ncclResult_t>(comm->init_result.load());
  if (comm->init_result != ncclInProgress) return static_cast<ncclResult_t>(comm->init_result.load());
  cohort_status_t s = cohort_team_create_test(comm->team);
  if (s == COHORT_IN_PROGRESS) return ncclInProgress;
  ncclResult_t r = from_cohort(s, "ncclCommInitRank (nonblocking)");
  if (r == ncclSuccess) {
    cohort_team_cuda_device(comm->team, &comm->device);
    comm->ready = true;
  }
  comm->init_result = r;
  return r;
}

}  // namespace cohort_nccl

using cohort_nccl::check_comm;
using cohort_nccl::fail;
using cohort_nccl::from_cohort;

namespace {

cohort_unique_id_t to_cohort_id(const ncclUniqueId &id) {
  static_assert(sizeof(ncclUniqueId) == sizeof(cohort_unique_id_t));
  cohort_unique_id_t out;
  std::memcpy(&out, &id, sizeof(out));
  return out;
}

ncclResult_t init_rank(const char *call, ncclComm_t *comm, int nranks, const ncclUniqueId &id,
                       int rank, const ncclConfig_t *config) {
  if (comm == nullptr) return fail(ncclInvalidArgument, std::string(call) + ": comm is NULL");
  *comm = nullptr;
  bool blocking = true;
  std::string name;
  ncclResult_t r = cohort_nccl::read_config(config, &blocking, &name);
  if (r != ncclSuccess) return r;
  return cohort_nccl::create_comm(comm, to_cohort_id(id), nranks, rank, blocking, name, call);
}

// Frees the communicator; `abort` stops its work first without waiting for peers.
ncclResult_t end_comm(ncclComm_t comm, const char *call, bool abort) {
  ncclResult_t r = check_comm(comm, call);
  if (r != ncclSuccess) return r;
  cohort_nccl::comm_forget(comm);
  {
    std::lock_guard<std::mutex> lock(comm->init_mutex);  // no creation step runs meanwhile
    if (abort) cohort_team_abort(comm->team);
  }
  cohort_status_t s = cohort_team_destroy(comm->team);
  delete comm;
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, call);
}

// A query: the communicator checked (and ready, where the answer needs its creation ended).
ncclResult_t read_comm(const char *call, ncclComm_t comm, int *out, int ncclComm::*field,
                       bool need_ready) {
  ncclResult_t r = need_ready ? cohort_nccl::ready_comm(comm, call) : check_comm(comm, call);
  if (r != ncclSuccess) return r;
  if (out == nullptr) return fail(ncclInvalidArgument, std::string(call) + ": output is NULL");
  *out = comm->*field;
  return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  cohort_unique_id_t id;
  cohort_status_t s = cohort_unique_id_create(&id);
  if (s != COHORT_SUCCESS) return from_cohort(s, "ncclGetUniqueId");
  std::memcpy(uniqueId, &id, sizeof(id));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank("ncclCommInitRank", comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config) {
  return init_rank("ncclCommInitRankConfig", comm, nranks, commId, rank, config);
}

// Every rank holds the same ids; the first one's creator serves the rendezvous (the others are
// NCCL's way to spread a large job's bootstrap over several roots: one suffices here).
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId *commIds, ncclConfig_t *config) {
  if (nId < 1 || commIds == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable: give at least one id (nId=" +
                                         std::to_string(nId) + ")");
  }
  return init_rank("ncclCommInitRankScalable", newcomm, nranks, commIds[0], myrank, config);
}

// One process, one rank per device: every creation is posted, then all are driven together.
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  if (comms == nullptr || ndev < 1) {
    return fail(ncclInvalidArgument, "ncclCommInitAll: comms is NULL or ndev < 1");
  }
  cohort_unique_id_t id;
  cohort_status_t s = cohort_unique_id_create(&id);
  if (s != COHORT_SUCCESS) return from_cohort(s, "ncclCommInitAll");
  for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
  ncclResult_t result = ncclSuccess;
  for (int i = 0; i < ndev && result == ncclSuccess; ++i) {
    const int device = devlist != nullptr ? devlist[i] : i;
    ncclResult_t r = cohort_nccl::create_comm(&comms[i], id, ndev, i, false, "nccl",
                                              "ncclCommInitAll", device);
    if (r != ncclInProgress) result = r;
  }
  for (bool pending = result == ncclSuccess; pending;) {
    pending = false;
    for (int i = 0; i < ndev; ++i) {
      ncclResult_t r = cohort_nccl::drive_creation(comms[i]);
      if (r == ncclInProgress) pending = true;
      else if (r != ncclSuccess && result == ncclSuccess) result = r;
    }
  }
  for (int i = 0; i < ndev; ++i) {
    if (result == ncclSuccess) {
      comms[i]->blocking = true;
    } else if (comms[i] != nullptr) {
      end_comm(comms[i], "ncclCommInitAll", true);
      comms[i] = nullptr;
    }
  }
  return result;
}

// Cohort's work is on the caller's streams: nothing is left to flush once it was enqueued.
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return cohort_nccl::ready_comm(comm, "ncclCommFinalize");
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  return end_comm(comm, "ncclCommDestroy", false);
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  return end_comm(comm, "ncclCommAbort", true);
}

// Stops the communicator's work on every rank (peers' calls end naming this rank); the handle
// stays until it is destroyed.
ncclResult_t ncclCommRevoke(ncclComm_t comm, int /*revokeFlags*/) {
  ncclResult_t r = check_comm(comm, "ncclCommRevoke");
  if (r != ncclSuccess) return r;
  comm->revoked = true;
  cohort_status_t s = cohort_team_abort(comm->team);
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, "ncclCommRevoke");
}

// Safe from any thread (PyTorch's watchdog polls it); drives a nonblocking creation.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  ncclResult_t r = check_comm(comm, "ncclCommGetAsyncError");
  if (r != ncclSuccess) return r;
  if (asyncError == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  }
  if (!comm->ready) {
    *asyncError = cohort_nccl::drive_creation(comm);
    return ncclSuccess;
  }
  cohort_status_t team_error = COHORT_SUCCESS;
  cohort_status_t s = cohort_team_get_async_error(comm->team, &team_error);
  if (s != COHORT_SUCCESS) return from_cohort(s, "ncclCommGetAsyncError");
  *asyncError = team_error == COHORT_SUCCESS ? ncclSuccess
                                             : from_cohort(team_error, "the communicator");
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  return read_comm("ncclCommCount", comm, count, &ncclComm::size, false);
}

// The device a creation bound is known once it ended.
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  return read_comm("ncclCommCuDevice", comm, device, &ncclComm::device, true);
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  return read_comm("ncclCommUserRank", comm, rank, &ncclComm::rank, false);
}

}  // extern "C"
