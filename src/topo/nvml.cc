#include "topo/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
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

}  // namespace cohort::topo
