#include "team/peer.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/gpu_identity.h"
#include "core/hash.h"
#include "core/params.h"

namespace cohort {
namespace {

template <size_t N>
void copy_field(char (&dst)[N], const std::string &src) {
  std::memset(dst, 0, N);
  std::strncpy(dst, src.c_str(), N - 1);
}

std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

// The host label as gather_local_peer() computes it (COHORT_HOST_ID, else hostname).
std::string local_host_label() {
  std::string label;
  param_string("HOST_ID", &label);
  if (!label.empty()) return label;
  char hostname[256] = {};
  gethostname(hostname, sizeof(hostname) - 1);
  return hostname;
}

ArrivalRecord local_arrival() {
  ArrivalRecord arrival;
  std::memset(&arrival, 0, sizeof(arrival));
  arrival.pid = static_cast<int32_t>(getpid());
  copy_field(arrival.host_label, local_host_label());
  return arrival;
}

uint64_t host_id_hash(const std::string &hostname, const std::string &boot_id,
                      const std::string &host_id_override) {
  if (!host_id_override.empty()) return fnv1a("override:" + host_id_override);
  return fnv1a(hostname + "/" + boot_id);
}

Status gather_local_peer(int cuda_device, PeerRecord *out) {
  PeerRecord peer;
  std::memset(&peer, 0, sizeof(peer));
  char hostname[256] = {};
  if (gethostname(hostname, sizeof(hostname) - 1) != 0) {
    return failf(COHORT_ERR_SYSTEM, "gethostname: %s", strerror(errno));
  }
  std::string override_id;
  Status s = param_string("HOST_ID", &override_id);
  if (is_error(s)) return s;
  peer.pid = static_cast<int32_t>(getpid());
  peer.host_id = host_id_hash(hostname, read_boot_id(), override_id);
  copy_field(peer.hostname, hostname);
  copy_field(peer.host_label, override_id.empty() ? std::string(hostname) : override_id);
  GpuIdentity gpu;
  s = query_gpu_identity(cuda_device, &gpu);
  if (is_error(s)) return s;
  peer.cuda_device = gpu.device;
  copy_field(peer.bus_id, gpu.bus_id);
  std::memcpy(peer.uuid, gpu.uuid, sizeof(peer.uuid));
  peer.numa_node = gpu.device >= 0 && gpu.numa_node >= 0 ? gpu.numa_node : current_numa_node();
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  copy_field(peer.cuda_visible_devices, cvd != nullptr ? std::string(cvd) : "<unset>");
  *out = peer;
  return COHORT_SUCCESS;
}

cohort_peer_info_t to_public_peer_info(const PeerRecord &peer, int rank, int node_index,
                                       int local_rank) {
  cohort_peer_info_t info;
  std::memset(&info, 0, sizeof(info));
  info.rank = rank;
  info.node_index = node_index;
  info.local_rank = local_rank;
  info.pid = peer.pid;
  info.host_id = peer.host_id;
  copy_field(info.hostname, std::string(peer.host_label, strnlen(peer.host_label, 64)));
  info.cuda_device = peer.cuda_device;
  copy_field(info.bus_id, std::string(peer.bus_id, strnlen(peer.bus_id, 32)));
  std::memcpy(info.uuid, peer.uuid, sizeof(info.uuid));
  info.numa_node = peer.numa_node;
  return info;
}

std::string describe_rank(const char *host_label, int pid, int rank) {
  return strprintf("rank %d (host %.64s, pid %d)", rank, host_label, pid);
}

}  // namespace cohort
