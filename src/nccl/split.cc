// ncclCommSplit and ncclCommShrink: the parent team agrees on the children's members, a
// member of each child makes a unique id and hands it over through the parent, and each child
// is created from its id like any communicator (its own phases, report and timeouts).
#include <algorithm>
#include <cstring>
#include <vector>

#include "shim.h"

using cohort_nccl::fail;
using cohort_nccl::from_cohort;

namespace {

struct SplitRecord {
  int32_t color;
  int32_t key;
  int32_t bad;  // this rank's arguments are wrong: every rank fails alike
};

// The config of a child: the caller's, or the parent's blocking mode and name.
ncclResult_t child_config(ncclComm_t parent, const ncclConfig_t *config, bool *blocking,
                          std::string *name) {
  if (config == nullptr) {
    *blocking = parent->blocking;
    *name = parent->name;
    return ncclSuccess;
  }
  return cohort_nccl::read_config(config, blocking, name);
}

// Every rank's id slot; the creator of each child fills its own.
ncclResult_t share_ids(ncclComm_t parent, bool creator, std::vector<cohort_unique_id_t> *ids,
                       const char *call) {
  cohort_unique_id_t mine{};
  if (creator) {
    cohort_status_t s = cohort_unique_id_create(&mine);
    // A failure here still takes part in the allgather below, with an id that fails to parse.
    if (s != COHORT_SUCCESS) std::memset(&mine, 0, sizeof(mine));
  }
  ids->resize(parent->size);
  cohort_status_t s = cohort_allgather(parent->team, &mine, ids->data(), sizeof(mine),
                                       COHORT_UINT8);
  return s == COHORT_SUCCESS ? ncclSuccess : from_cohort(s, call);
}

}  // namespace

extern "C" {

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
  const char *call = "ncclCommSplit";
  ncclResult_t r = cohort_nccl::ready_comm(comm, call);
  if (r != ncclSuccess) return r;
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  *newcomm = nullptr;
  bool blocking = true;
  std::string name;
  ncclResult_t local = child_config(comm, config, &blocking, &name);
  std::string local_why = local != ncclSuccess ? ncclGetLastError(comm) : "";
  if (local == ncclSuccess && color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    local = fail(ncclInvalidArgument, "ncclCommSplit: color=" + std::to_string(color) +
                                          ": give a color >= 0 or NCCL_SPLIT_NOCOLOR");
    local_why = ncclGetLastError(comm);
  }
  SplitRecord mine{color, key, local != ncclSuccess ? 1 : 0};
  std::vector<SplitRecord> all(comm->size);
  cohort_status_t s = cohort_allgather(comm->team, &mine, all.data(), 3, COHORT_INT32);
  if (s != COHORT_SUCCESS) return from_cohort(s, call);
  for (int p = 0; p < comm->size; ++p) {
    if (all[p].bad == 0) continue;
    if (p == comm->rank) return fail(local, local_why);
    return fail(ncclInvalidArgument,
                "ncclCommSplit: rank " + std::to_string(p) + " passed a bad color or config");
  }
  std::vector<int> members;  // parent ranks of this rank's child, in (key, parent rank) order
  for (int p = 0; p < comm->size; ++p) {
    if (color != NCCL_SPLIT_NOCOLOR && all[p].color == color) members.push_back(p);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[a].key < all[b].key; });
  // The first member of each child, in that order, makes its id.
  const bool creator = !members.empty() && members[0] == comm->rank;
  std::vector<cohort_unique_id_t> ids;
  r = share_ids(comm, creator, &ids, call);
  if (r != ncclSuccess || members.empty()) return r;
  const int new_rank =
      static_cast<int>(std::find(members.begin(), members.end(), comm->rank) - members.begin());
  return cohort_nccl::create_comm(newcomm, ids[members[0]], static_cast<int>(members.size()),
                                  new_rank, blocking, name, call, comm->device);
}

// The excluded ranks do not call; the survivors meet through the parent's point-to-point
// channels between themselves, which the excluded ranks are not on.
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                            ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  const char *call = "ncclCommShrink";
  ncclResult_t r = cohort_nccl::ready_comm(comm, call);
  if (r != ncclSuccess) return r;
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  *newcomm = nullptr;
  if ((shrinkFlags & NCCL_SHRINK_ABORT) != 0) {
    return fail(ncclInvalidUsage,
                "ncclCommShrink: NCCL_SHRINK_ABORT is not supported by Cohort: aborting the "
                "parent ends it on every rank, and its survivors then have no channel to meet "
                "on; shrink with NCCL_SHRINK_DEFAULT, or create the new communicator from a "
                "new unique id");
  }
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return fail(ncclInvalidArgument, "ncclCommShrink: a bad exclude list");
  }
  std::vector<char> excluded(comm->size, 0);
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int x = excludeRanksList[i];
    if (x < 0 || x >= comm->size) {
      return fail(ncclInvalidArgument, "ncclCommShrink: excluded rank " + std::to_string(x) +
                                           " is not in 0.." + std::to_string(comm->size - 1));
    }
    excluded[x] = 1;
  }
  if (excluded[comm->rank]) {
    return fail(ncclInvalidUsage, "ncclCommShrink: this rank (" + std::to_string(comm->rank) +
                                      ") is in the exclude list: excluded ranks do not call");
  }
  bool blocking = true;
  std::string name;
  r = child_config(comm, config, &blocking, &name);
  if (r != ncclSuccess) return r;
  std::vector<int> survivors;
  for (int p = 0; p < comm->size; ++p) {
    if (!excluded[p]) survivors.push_back(p);
  }
  const int creator = survivors[0];
  cohort_unique_id_t id{};
  cohort_status_t s = COHORT_SUCCESS;
  if (comm->rank == creator) {
    s = cohort_unique_id_create(&id);
    if (s != COHORT_SUCCESS) return from_cohort(s, call);
    cohort_group_start();
    for (size_t i = 1; i < survivors.size(); ++i) {
      cohort_send(comm->team, &id, sizeof(id), COHORT_UINT8, survivors[i]);
    }
    s = cohort_group_end();
  } else {
    s = cohort_recv(comm->team, &id, sizeof(id), COHORT_UINT8, creator);
  }
  if (s != COHORT_SUCCESS) return from_cohort(s, call);
  const int new_rank = static_cast<int>(
      std::find(survivors.begin(), survivors.end(), comm->rank) - survivors.begin());
  return cohort_nccl::create_comm(newcomm, id, static_cast<int>(survivors.size()), new_rank,
                                  blocking, name, call, comm->device);
}

}  // extern "C"
