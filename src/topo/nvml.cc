#include "topo/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "core/log.h"
#include "topo/bandwidth.h"

namespace cohort::topo {
namespace {

// The few NVML declarations used here, as NVML's ABI defines them: the toolkit ships no
// nvml.h.  NVML's enums are C enums, i.e. ints.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st *;
using nvmlEnableState_t = int;
using nvmlIntNvLinkDeviceType_t = int;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlEnableState_t kNvmlFeatureEnabled = 1;
constexpr nvmlIntNvLinkDeviceType_t kNvLinkDeviceGpu = 0x00;
constexpr nvmlIntNvLinkDeviceType_t kNvLinkDeviceIbmNpu = 0x01;
constexpr nvmlIntNvLinkDeviceType_t kNvLinkDeviceSwitch = 0x02;
constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS: 18 on Hopper and Blackwell
using nvmlGpuP2PCapsIndex_t = int;
using nvmlGpuP2PStatus_t = int;
constexpr nvmlGpuP2PCapsIndex_t kP2pCapsRead = 0;   // NVML_P2P_CAPS_INDEX_READ
constexpr nvmlGpuP2PCapsIndex_t kP2pCapsWrite = 1;  // NVML_P2P_CAPS_INDEX_WRITE
constexpr nvmlGpuP2PStatus_t kP2pStatusOk = 0;      // NVML_P2P_STATUS_OK
constexpr const char *kNvmlLibrary = "libnvidia-ml.so.1";

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*handle_by_bus_id)(const char *, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, nvmlEnableState_t *) = nullptr;
  nvmlReturn_t (*remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t *) = nullptr;
  // Optional: older drivers lack them.
  nvmlReturn_t (*remote_type)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t *) = nullptr;
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int *, int *) = nullptr;
  nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t,
                             nvmlGpuP2PStatus_t *) = nullptr;
  const char *(*error_string)(nvmlReturn_t) = nullptr;
};

struct NvmlLibrary {
  NvmlApi api;
  std::string error;  // empty: loaded
};

template <typename Fn>
bool bind(void *lib, const char *name, Fn *fn) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return *fn != nullptr;
}

NvmlLibrary load_nvml() {
  NvmlLibrary out;
  // Never dlclose'd: NVML keeps driver state of its own, and this runs once per process.
  void *lib = dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    out.error = dlerror();
    return out;
  }
  NvmlApi &api = out.api;
  if (!bind(lib, "nvmlInit_v2", &api.init) || !bind(lib, "nvmlShutdown", &api.shutdown) ||
      !bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &api.handle_by_bus_id) ||
      !bind(lib, "nvmlDeviceGetNvLinkState", &api.link_state) ||
      !bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api.remote_pci)) {
    out.error = dlerror();
    return out;
  }
  bind(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &api.remote_type);
  bind(lib, "nvmlDeviceGetCudaComputeCapability", &api.compute_capability);
  bind(lib, "nvmlDeviceGetP2PStatus", &api.p2p_status);
  bind(lib, "nvmlErrorString", &api.error_string);
  return out;
}

const NvmlLibrary &nvml_library() {
  static const NvmlLibrary library = load_nvml();
  return library;
}

std::string nvml_error(const NvmlApi &api, nvmlReturn_t rc) {
  if (api.error_string != nullptr) return api.error_string(rc);
  return strprintf("NVML error %d", rc);
}

NvLinkPeer remote_peer(const NvmlApi &api, nvmlDevice_t device, unsigned link) {
  nvmlIntNvLinkDeviceType_t type = -1;
  if (api.remote_type == nullptr || api.remote_type(device, link, &type) != kNvmlSuccess) {
    return NvLinkPeer::kUnknown;
  }
  switch (type) {
    case kNvLinkDeviceGpu: return NvLinkPeer::kGpu;
    case kNvLinkDeviceIbmNpu: return NvLinkPeer::kCpu;
    case kNvLinkDeviceSwitch: return NvLinkPeer::kSwitch;
    default: return NvLinkPeer::kUnknown;
  }
}

// The far end of `link` when it is active.  Links past the GPU's own count answer an error
// (NOT_SUPPORTED or INVALID_ARGUMENT), which reads as inactive.
bool active_link_end(const NvmlApi &api, nvmlDevice_t device, unsigned link, NvLinkEnd *end) {
  nvmlEnableState_t active = 0;
  if (api.link_state(device, link, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) {
    return false;
  }
  nvmlPciInfo_t pci{};
  if (api.remote_pci(device, link, &pci) == kNvmlSuccess) {
    pci.busId[sizeof(pci.busId) - 1] = '\0';
    end->bus_id = normalize_bus_id(pci.busId);
  }
  end->peer = remote_peer(api, device, link);
  return true;
}

bool query_gpu(const NvmlApi &api, const std::string &bus_id, NvmlGpu *gpu) {
  nvmlDevice_t device = nullptr;
  nvmlReturn_t rc = api.handle_by_bus_id(bus_id.c_str(), &device);
  if (rc != kNvmlSuccess) {
    COHORT_LOG_INFO(TOPO, "NVML does not know GPU %s (%s): its NVLinks are unknown", bus_id.c_str(),
                    nvml_error(api, rc).c_str());
    return false;
  }
  gpu->bus_id = bus_id;
  int major = 0, minor = 0;
  if (api.compute_capability != nullptr &&
      api.compute_capability(device, &major, &minor) == kNvmlSuccess) {
    gpu->sm = major * 10 + minor;
  }
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    NvLinkEnd end;
    if (active_link_end(api, device, link, &end)) gpu->links.push_back(std::move(end));
  }
  return true;
}

constexpr int kToSwitch = -2;

// The model node an NVLink leads to: a GPU's index, kToSwitch, or -1 when left out.
int far_end(const NvLinkEnd &end, const Topology &topo) {
  int gpu = end.bus_id.empty() ? -1 : topo.find(NodeType::kGpu, end.bus_id);
  switch (end.peer) {
    case NvLinkPeer::kGpu: return gpu;
    case NvLinkPeer::kSwitch: return kToSwitch;
    case NvLinkPeer::kCpu: return -1;
    case NvLinkPeer::kUnknown: break;
  }
  // NVSwitch PCI devices are not GPUs of the model, so an unknown peer that is no GPU is
  // taken for the fabric.
  return gpu >= 0 ? gpu : kToSwitch;
}

// A pair's links run at the slower end's rate; 0 (unknown) defers to the other end.
int pair_sm(int a, int b) {
  if (a == 0 || b == 0) return std::max(a, b);
  return std::min(a, b);
}

struct NvLinkCounts {
  std::map<std::pair<int, int>, int> gpu_pairs;  // (lower, higher GPU index) -> links
  std::map<int, int> to_switch;                  // GPU index -> links to the fabric
};

void count_links(const NvmlGpu &gpu, int self, const Topology &topo, NvLinkCounts *counts) {
  std::map<int, int> per_peer;
  for (const NvLinkEnd &end : gpu.links) {
    int peer = far_end(end, topo);
    if (peer == self) continue;
    if (peer == kToSwitch) {
      ++counts->to_switch[self];
    } else if (peer >= 0) {
      ++per_peer[peer];
    } else {
      COHORT_LOG_TRACE(TOPO, "NVLink of GPU %s to %s left out (not a GPU of this model)",
                       gpu.bus_id.c_str(), end.bus_id.empty() ? "?" : end.bus_id.c_str());
    }
  }
  // Both ends report a GPU-GPU link; the larger report wins in case one end was not asked.
  for (const auto &[peer, n] : per_peer) {
    int &count = counts->gpu_pairs[{std::min(self, peer), std::max(self, peer)}];
    count = std::max(count, n);
  }
}

// NVML's nvmlGpuP2PStatus_t values past NVML_P2P_STATUS_OK, in its order; the last is UNKNOWN.
constexpr const char *kP2pStatusWords[] = {
    "not supported by the chipset",       // NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED (sic)
    "not supported by the GPU",           // NVML_P2P_STATUS_GPU_NOT_SUPPORTED
    "not supported by the IOH topology",  // NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED
    "disabled by a registry key",         // NVML_P2P_STATUS_DISABLED_BY_REGKEY
    "not supported",                      // NVML_P2P_STATUS_NOT_SUPPORTED
    "unknown",                            // NVML_P2P_STATUS_UNKNOWN
};
constexpr int kP2pStatusUnknown = 6;

// One capability's status as an answer: worse answers have larger values (kOk < kUnknown <
// kNotSupported), so the worse of reads and writes wins.
int p2p_severity(nvmlGpuP2PStatus_t status) {
  if (status == kP2pStatusOk) return 0;
  return status > kP2pStatusOk && status < kP2pStatusUnknown ? 2 : 1;
}

std::string p2p_status_words(nvmlGpuP2PStatus_t status) {
  if (status > kP2pStatusOk && status <= kP2pStatusUnknown) return kP2pStatusWords[status - 1];
  return strprintf("status %d", status);
}

// The P2P read and write statuses of a pair of GPUs NVML knows.
NvmlP2pAnswer ask_pair(const NvmlApi &api, nvmlDevice_t mine, nvmlDevice_t peer) {
  nvmlGpuP2PStatus_t read = -1, write = -1;
  nvmlReturn_t rc = api.p2p_status(mine, peer, kP2pCapsRead, &read);
  if (rc == kNvmlSuccess) rc = api.p2p_status(mine, peer, kP2pCapsWrite, &write);
  if (rc != kNvmlSuccess) {
    return {NvmlP2p::kUnavailable, "nvmlDeviceGetP2PStatus: " + nvml_error(api, rc)};
  }
  return p2p_answer(read, write);
}

}  // namespace

bool query_nvml(const std::vector<std::string> &bus_ids, std::vector<NvmlGpu> *out,
                std::string *why) {
  const NvmlLibrary &library = nvml_library();
  if (!library.error.empty()) {
    *why = library.error;
    return false;
  }
  const NvmlApi &api = library.api;
  nvmlReturn_t rc = api.init();
  if (rc != kNvmlSuccess) {
    *why = "nvmlInit_v2: " + nvml_error(api, rc);
    return false;
  }
  out->clear();
  for (const std::string &bus_id : bus_ids) {
    NvmlGpu gpu;
    if (query_gpu(api, bus_id, &gpu)) out->push_back(std::move(gpu));
  }
  api.shutdown();
  return true;
}

void add_nvlinks(const std::vector<NvmlGpu> &gpus, Topology *topo) {
  NvLinkCounts counts;
  for (const NvmlGpu &gpu : gpus) {
    int self = topo->find(NodeType::kGpu, gpu.bus_id);
    if (self < 0) continue;
    if (topo->nodes[self].sm == 0) topo->nodes[self].sm = gpu.sm;
    count_links(gpu, self, *topo, &counts);
  }
  for (const auto &[pair, count] : counts.gpu_pairs) {
    int sm = pair_sm(topo->nodes[pair.first].sm, topo->nodes[pair.second].sm);
    topo->connect(pair.first, pair.second, LinkType::kNvLink, count * nvlink_bw(sm), -1, count);
  }
  if (counts.to_switch.empty()) return;
  int fabric = topo->find(NodeType::kNvSwitch, "nvswitch");
  if (fabric < 0) {
    Node node;
    node.type = NodeType::kNvSwitch;
    node.id = "nvswitch";
    fabric = topo->add_node(std::move(node));
  }
  for (const auto &[gpu, count] : counts.to_switch) {
    double bw = count * nvlink_bw(topo->nodes[gpu].sm);
    topo->connect(gpu, fabric, LinkType::kNvLink, bw, -1, count);
  }
}

NvmlP2pAnswer p2p_answer(int read_status, int write_status) {
  constexpr NvmlP2p kBySeverity[] = {NvmlP2p::kOk, NvmlP2p::kUnknown, NvmlP2p::kNotSupported};
  int severity = 0;
  std::string detail;
  for (const auto &[what, status] :
       {std::pair{"reads", read_status}, std::pair{"writes", write_status}}) {
    if (status == kP2pStatusOk) continue;
    severity = std::max(severity, p2p_severity(status));
    detail += strprintf("%sP2P %s: %s", detail.empty() ? "" : "; ", what,
                        p2p_status_words(status).c_str());
  }
  return {kBySeverity[severity], detail};
}

namespace {

// One NVML session for the pairs of `bus_id` and `peers`.
std::vector<NvmlP2pAnswer> ask_nvml_p2p(const std::string &bus_id,
                                        const std::vector<std::string> &peers) {
  std::vector<NvmlP2pAnswer> answers(peers.size());
  auto unavailable = [&](const std::string &why) {
    for (NvmlP2pAnswer &answer : answers) answer = {NvmlP2p::kUnavailable, why};
    return answers;
  };
  if (peers.empty()) return answers;
  const NvmlLibrary &library = nvml_library();
  if (!library.error.empty()) return unavailable(library.error);
  const NvmlApi &api = library.api;
  if (api.p2p_status == nullptr) return unavailable("this NVML has no nvmlDeviceGetP2PStatus");
  nvmlReturn_t rc = api.init();
  if (rc != kNvmlSuccess) return unavailable("nvmlInit_v2: " + nvml_error(api, rc));
  auto handle = [&](const std::string &bus, nvmlDevice_t *device, std::string *why) {
    nvmlReturn_t found = api.handle_by_bus_id(bus.c_str(), device);
    if (found != kNvmlSuccess) {
      *why =
          strprintf("NVML does not know GPU %s (%s)", bus.c_str(), nvml_error(api, found).c_str());
    }
    return found == kNvmlSuccess;
  };
  std::string why;
  nvmlDevice_t mine = nullptr;
  if (!handle(bus_id, &mine, &why)) {
    unavailable(why);
  } else {
    for (size_t i = 0; i < peers.size(); ++i) {
      nvmlDevice_t peer = nullptr;
      answers[i] = handle(peers[i], &peer, &why) ? ask_pair(api, mine, peer)
                                                 : NvmlP2pAnswer{NvmlP2p::kUnavailable, why};
    }
  }
  api.shutdown();
  return answers;
}

}  // namespace

// NVML's start costs tens of ms, and every team of ranks that CUDA_VISIBLE_DEVICES isolates
// asks: each pair is asked once per process (its answer, unavailable included, kept).
std::vector<NvmlP2pAnswer> nvml_p2p(const std::string &bus_id,
                                    const std::vector<std::string> &peers) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, NvmlP2pAnswer> known;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::string> unknown;
  for (const std::string &peer : peers) {
    if (known.count({bus_id, peer}) == 0) unknown.push_back(peer);
  }
  const std::vector<NvmlP2pAnswer> asked = ask_nvml_p2p(bus_id, unknown);
  for (size_t i = 0; i < unknown.size(); ++i) known[{bus_id, unknown[i]}] = asked[i];
  std::vector<NvmlP2pAnswer> answers;
  for (const std::string &peer : peers) answers.push_back(known.at({bus_id, peer}));
  return answers;
}

}  // namespace cohort::topo
