// What every rank tells the others about itself in the peer-info phase, and how it learns it.
#pragma once

#include <cstdint>
#include <string>

#include "cohort.h"
#include "core/status.h"

namespace cohort {

// Trivially copyable: it travels as bytes through the OOB.
struct PeerRecord {
  int32_t pid;
  int32_t cuda_device;  // -1: no GPU
  int32_t numa_node;    // -1: unknown
  int32_t reserved;
  uint64_t host_id;
  char host_label[64];  // hostname, or the COHORT_HOST_ID value when set
  char hostname[64];
  char bus_id[32];
  uint8_t uuid[16];
  char cuda_visible_devices[128];  // "<unset>" when the variable is not set
};

// Sent with check-in, so that a rank stuck before peer-info can be named by host and pid.
struct ArrivalRecord {
  int32_t pid;
  char host_label[64];
};

ArrivalRecord local_arrival();

// Host identity: a 64-bit hash of `host_id_override` when non-empty, else of hostname +
// /proc/sys/kernel/random/boot_id (two containers with one hostname differ by boot id).
uint64_t host_id_hash(const std::string &hostname, const std::string &boot_id,
                      const std::string &host_id_override);

// Fills this process's record for a team bound to `cuda_device` (ordinal, CURRENT or NONE).
Status gather_local_peer(int cuda_device, PeerRecord *out);

cohort_peer_info_t to_public_peer_info(const PeerRecord &peer, int rank, int node_index,
                                       int local_rank);

// "rank 3 (host node7, pid 4242)"
std::string describe_rank(const char *host_label, int pid, int rank);

}  // namespace cohort
