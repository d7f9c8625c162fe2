// Detection: hwloc gives the CPUs (one per NUMA node with cores) and the PCI tree down to the
// GPUs and NICs; the CUDA runtime (detect_cuda.cc) names the GPUs this process uses; NVML
// (nvml.cc) adds the NVLinks.
//
// The PCI tree is kept small.  A CPU's root ports are part of the CPU node, and a PCIe
// switch, which hwloc shows as an upstream-port bridge over one downstream-port bridge per
// slot, is one kPci node named by its upstream port.  So the bridges below a host bridge
// alternate: root port (merged into the CPU), upstream port (a node), downstream port
// (merged into the switch), upstream port of a cascaded switch, and so on.  Bridges that
// lead to no GPU or NIC are left out.
#include "topo/detect.h"

#include <hwloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "topo/bandwidth.h"
#include "topo/detect_cuda.h"
#include "topo/detect_internal.h"
#include "topo/nvml.h"

namespace cohort::topo {

// ------------------------------------------------------------------------------ parsers

namespace {

// The number `text` starts with, whatever the locale; false when it starts with none.
template <typename T>
bool leading_number(const std::string &text, T *out) {
  const char *begin = text.data();
  const char *end = begin + text.size();
  while (begin < end && isspace(static_cast<unsigned char>(*begin))) ++begin;
  return std::from_chars(begin, end, *out).ec == std::errc();
}

}  // namespace

int pci_gen_from_speed(const std::string &text) {
  // GT/s per lane of each PCIe generation.
  static constexpr double kGts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  double gts = 0;
  if (!leading_number(text, &gts)) return 0;
  for (int gen = 1; gen <= 6; ++gen) {
    if (std::fabs(gts - kGts[gen - 1]) < 0.01) return gen;
  }
  return 0;
}

int pci_width_from_text(const std::string &text) {
  int width = 0;
  if (!leading_number(text, &width) || width < 0) return 0;
  return width;
}

double ib_rate_gbps(const std::string &text) {
  double gbps = 0;
  if (!leading_number(text, &gbps) || !(gbps > 0)) return 0;
  return gbps;
}

double net_speed_gbps(const std::string &text) {
  double mbps = 0;
  if (!leading_number(text, &mbps) || !(mbps > 0)) return 0;  // -1: link down or virtual
  return mbps / 1000.0;
}

std::string cpu_vendor_name(const std::string &cpu_vendor) {
  if (cpu_vendor == "GenuineIntel") return "intel";
  if (cpu_vendor == "AuthenticAMD") return "amd";
  std::string out = cpu_vendor;
  for (char &c : out) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string cpu_arch_name(const std::string &machine) {
  if (machine == "ppc64le") return "ppc64";
  return machine;
}

// ------------------------------------------------------------------- merging CUDA's view

namespace {

int add_gpu_outside_tree(const CudaGpu &gpu, Topology *topo) {
  int cpu = gpu.numa_node >= 0 ? topo->find(NodeType::kCpu, strprintf("cpu%d", gpu.numa_node)) : -1;
  std::vector<int> cpus = topo->of_type(NodeType::kCpu);
  if (cpu < 0 && !cpus.empty()) cpu = cpus.front();
  Node node;
  node.type = NodeType::kGpu;
  node.id = gpu.bus_id;
  int index = topo->add_node(std::move(node));
  if (cpu < 0) return index;  // no CPU to hang it from: validate() names the GPU
  topo->connect(index, cpu, LinkType::kPci, pci_bw(0, 0));
  topo->assumptions.push_back(strprintf("GPU %s not in the PCI tree: attached to %s",
                                        gpu.bus_id.c_str(), topo->nodes[cpu].id.c_str()));
  return index;
}

}  // namespace

void merge_cuda_gpus(const CudaGpus &cuda, Topology *topo) {
  for (const CudaGpu &gpu : cuda.gpus) {
    int index = topo->find(NodeType::kGpu, gpu.bus_id);
    if (index < 0) index = add_gpu_outside_tree(gpu, topo);
    Node &node = topo->nodes[index];
    node.sm = gpu.sm;
    node.uuid = gpu.uuid;
    node.cuda_device = gpu.cuda_device;
  }
  topo->no_p2p.insert(topo->no_p2p.end(), cuda.no_p2p.begin(), cuda.no_p2p.end());
}

bool is_flat_pci_tree(const Topology &topo) {
  std::vector<int> gpus = topo.of_type(NodeType::kGpu);
  if (gpus.size() < 2) return false;
  for (int gpu : gpus) {
    for (int l : topo.nodes[gpu].links) {
      const Link &link = topo.links[l];
      if (link.type == LinkType::kPci && topo.nodes[link.to].type == NodeType::kPci) return false;
    }
  }
  return true;
}

// ------------------------------------------------------------------------------ hwloc

namespace {

Status hwloc_fail(const char *call) {
  Status s = failf(COHORT_ERR_SYSTEM, "topology detection: %s failed: %s", call,
                   errno != 0 ? strerror(errno) : "no reason given");
  COHORT_LOG_WARN(TOPO, "%s", last_error().c_str());
  return s;
}

// An hwloc topology of this host, with its I/O objects, destroyed with the object.
class Hwloc {
 public:
  Hwloc() = default;
  Hwloc(const Hwloc &) = delete;
  Hwloc &operator=(const Hwloc &) = delete;
  ~Hwloc() {
    if (topology_ != nullptr) hwloc_topology_destroy(topology_);
  }

  Status load() {
    if (hwloc_topology_init(&topology_) != 0) {
      topology_ = nullptr;
      return hwloc_fail("hwloc_topology_init");
    }
    // The whole host, not this process's cgroup: ranks bound to different sockets must
    // build one model.
    if (hwloc_topology_set_flags(topology_, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
      return hwloc_fail("hwloc_topology_set_flags");
    }
    // "Important" keeps GPUs, NICs and storage and the bridges above them.
    if (hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
      return hwloc_fail("hwloc_topology_set_io_types_filter");
    }
    // Caches are never used here, and reading them costs time.
    if (hwloc_topology_set_cache_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_NONE) != 0 ||
        hwloc_topology_set_icache_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_NONE) != 0) {
      return hwloc_fail("hwloc_topology_set_cache_types_filter");
    }
    // These plugins would open GPU runtimes (or an X display) for OS devices unused here.
    // A plugin this hwloc lacks refuses the call, which is fine.
    for (const char *name : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"}) {
      hwloc_topology_set_components(topology_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
    }
    if (hwloc_topology_load(topology_) != 0) return hwloc_fail("hwloc_topology_load");
    return COHORT_SUCCESS;
  }

  hwloc_topology_t get() const { return topology_; }

 private:
  hwloc_topology_t topology_ = nullptr;
};

struct Builder {
  hwloc_topology_t hw = nullptr;
  Topology *topo = nullptr;
  std::map<unsigned, int> cpu_of_numa;  // NUMA os index -> CPU node; empty when unknown
  int first_cpu = -1;
  int unknown_pci_links = 0;
  std::vector<std::string> unplaced_host_bridges;  // of no single NUMA node
};

std::string read_line(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// ----------------------------------------------------------------------------- CPUs

std::string cpu_vendor(hwloc_topology_t hw) {
  // Linux x86 hwloc puts CPUVendor on each package, other backends on the root.
  const char *vendor = hwloc_obj_get_info_by_name(hwloc_get_root_obj(hw), "CPUVendor");
  hwloc_obj_t package = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PACKAGE, 0);
  if (vendor == nullptr && package != nullptr) {
    vendor = hwloc_obj_get_info_by_name(package, "CPUVendor");
  }
  return cpu_vendor_name(vendor != nullptr ? vendor : "");
}

std::string machine_arch() {
  utsname name;
  if (uname(&name) != 0) return "";
  return cpu_arch_name(name.machine);
}

// NUMA nodes with cores: memory-only ones (CXL, HBM, a Grace Hopper GPU's memory) are no
// CPUs.  Empty when some NUMA node has no OS index, or none has cores.
std::vector<unsigned> numa_nodes_with_cores(hwloc_topology_t hw) {
  std::vector<unsigned> out;
  hwloc_obj_t numa = nullptr;
  while ((numa = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, numa)) != nullptr) {
    if (numa->os_index == HWLOC_UNKNOWN_INDEX) return {};
    if (numa->cpuset != nullptr && !hwloc_bitmap_iszero(numa->cpuset)) {
      out.push_back(numa->os_index);
    }
  }
  return out;
}

void add_cpus(Builder *b) {
  Topology *topo = b->topo;
  Node cpu;
  cpu.type = NodeType::kCpu;
  cpu.arch = machine_arch();
  cpu.vendor = cpu_vendor(b->hw);
  std::vector<unsigned> numas = numa_nodes_with_cores(b->hw);
  if (numas.empty()) {
    cpu.id = "cpu0";
    b->first_cpu = topo->add_node(cpu);
    topo->assumptions.push_back("NUMA unknown: one CPU assumed");
    return;
  }
  for (unsigned os_index : numas) {
    cpu.id = strprintf("cpu%u", os_index);
    cpu.numa = static_cast<int>(os_index);
    b->cpu_of_numa[os_index] = topo->add_node(cpu);
  }
  b->first_cpu = b->cpu_of_numa.begin()->second;
  for (auto a = b->cpu_of_numa.begin(); a != b->cpu_of_numa.end(); ++a) {
    for (auto c = std::next(a); c != b->cpu_of_numa.end(); ++c) {
      topo->connect(a->second, c->second, LinkType::kCpu, cpu_link_bw(cpu.vendor));
    }
  }
}

// ------------------------------------------------------------------------- PCI tree

enum class Device { kOther, kGpu, kNic };
enum class BridgeRole { kRootPort, kSwitchUpstream, kSwitchDownstream };

constexpr unsigned kNvidiaVendor = 0x10de;
using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

std::string bus_id_of(const PciAttr &pci) {
  return strprintf("%04x:%02x:%02x.%x", static_cast<unsigned>(pci.domain), pci.bus, pci.dev,
                   pci.func);
}

// The OS device naming a NIC: the verbs device (mlx5_0) before the netdev (ib0, eth0).
hwloc_obj_t nic_os_device(hwloc_obj_t pci) {
  hwloc_obj_t netdev = nullptr;
  for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) return child;
    if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && netdev == nullptr) netdev = child;
  }
  return netdev;
}

Device classify(hwloc_obj_t pci) {
  const PciAttr &attr = pci->attr->pcidev;
  // 0x0300 VGA, 0x0302 3D controller.  NVSwitches (0x0680) are left to NVML.
  if (attr.vendor_id == kNvidiaVendor && (attr.class_id == 0x0300 || attr.class_id == 0x0302)) {
    return Device::kGpu;
  }
  if ((attr.class_id >> 8) == 0x02 || nic_os_device(pci) != nullptr) return Device::kNic;
  return Device::kOther;
}

bool leads_to_device(hwloc_obj_t obj) {
  for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_PCI_DEVICE && classify(child) != Device::kOther) return true;
    if (child->type == HWLOC_OBJ_BRIDGE && leads_to_device(child)) return true;
  }
  return false;
}

void set_nic_port(hwloc_obj_t pci, Node *nic) {
  hwloc_obj_t osdev = nic_os_device(pci);
  if (osdev == nullptr || osdev->name == nullptr) return;
  nic->name = osdev->name;
  if (osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
    nic->speed_gbps =
        ib_rate_gbps(read_line("/sys/class/infiniband/" + nic->name + "/ports/1/rate"));
  } else {
    nic->speed_gbps = net_speed_gbps(read_line("/sys/class/net/" + nic->name + "/speed"));
  }
}

// Adds `node` with a PCI link to `parent`, at the speed sysfs reports for its upstream link.
int attach_pci(Node node, int parent, Builder *b) {
  const std::string dir = "/sys/bus/pci/devices/" + node.id;
  int gen = pci_gen_from_speed(read_line(dir + "/current_link_speed"));
  int width = pci_width_from_text(read_line(dir + "/current_link_width"));
  if (gen == 0 || width == 0) ++b->unknown_pci_links;
  Topology *topo = b->topo;
  int index = topo->add_node(std::move(node));
  topo->connect(index, parent, LinkType::kPci, pci_bw(gen, width), -1, 1, gen, width);
  COHORT_LOG_TRACE(TOPO, "%s %s under %s, PCIe gen %d x%d", node_type_name(topo->nodes[index].type),
                   topo->nodes[index].id.c_str(), topo->nodes[parent].id.c_str(), gen, width);
  return index;
}

void add_device(hwloc_obj_t pci, int parent, Builder *b) {
  Node node;
  node.id = bus_id_of(pci->attr->pcidev);
  switch (classify(pci)) {
    case Device::kGpu: node.type = NodeType::kGpu; break;
    case Device::kNic:
      node.type = NodeType::kNic;
      set_nic_port(pci, &node);
      break;
    case Device::kOther: return;
  }
  attach_pci(std::move(node), parent, b);
}

void add_io_children(hwloc_obj_t obj, int parent, BridgeRole role, Builder *b);

void add_bridge(hwloc_obj_t bridge, int parent, BridgeRole role, Builder *b) {
  if (role != BridgeRole::kSwitchUpstream) {  // a root or downstream port: merged into parent
    add_io_children(bridge, parent, BridgeRole::kSwitchUpstream, b);
    return;
  }
  Node node;
  node.type = NodeType::kPci;
  node.id = bus_id_of(bridge->attr->bridge.upstream.pci);
  int index = attach_pci(std::move(node), parent, b);
  add_io_children(bridge, index, BridgeRole::kSwitchDownstream, b);
}

// `role`: what the bridges among obj's children are.
void add_io_children(hwloc_obj_t obj, int parent, BridgeRole role, Builder *b) {
  for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_PCI_DEVICE) {
      add_device(child, parent, b);
    } else if (child->type == HWLOC_OBJ_BRIDGE && leads_to_device(child)) {
      add_bridge(child, parent, role, b);
    }
  }
}

// The CPU of a host bridge: the NUMA node of the object hwloc hangs it from.
int host_bridge_cpu(hwloc_obj_t bridge, Builder *b) {
  hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(b->hw, bridge);
  std::vector<int> cpus;
  for (const auto &[os_index, cpu] : b->cpu_of_numa) {
    if (parent != nullptr && parent->nodeset != nullptr &&
        hwloc_bitmap_isset(parent->nodeset, os_index)) {
      cpus.push_back(cpu);
    }
  }
  if (cpus.size() == 1) return cpus.front();
  if (b->cpu_of_numa.size() > 1) {
    const auto &pci = bridge->attr->bridge.downstream.pci;
    b->unplaced_host_bridges.push_back(
        strprintf("%04x:%02x", static_cast<unsigned>(pci.domain), pci.secondary_bus));
  }
  return cpus.empty() ? b->first_cpu : cpus.front();
}

void add_pci_tree(Builder *b) {
  hwloc_obj_t bridge = nullptr;
  while ((bridge = hwloc_get_next_bridge(b->hw, bridge)) != nullptr) {
    if (bridge->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_HOST) continue;
    if (!leads_to_device(bridge)) continue;
    add_io_children(bridge, host_bridge_cpu(bridge, b), BridgeRole::kRootPort, b);
  }
}

// One network port per NIC, numbered in bus-id order.
void add_net_ports(Topology *topo) {
  std::vector<int> nics = topo->of_type(NodeType::kNic);
  std::sort(nics.begin(), nics.end(),
            [&](int a, int c) { return topo->nodes[a].id < topo->nodes[c].id; });
  for (size_t k = 0; k < nics.size(); ++k) {
    Node net;
    net.type = NodeType::kNet;
    net.id = strprintf("net%zu", k);
    net.name = topo->nodes[nics[k]].name;
    net.speed_gbps = topo->nodes[nics[k]].speed_gbps;
    double bw = nic_bw(net.speed_gbps);
    if (net.speed_gbps <= 0) {
      topo->assumptions.push_back(strprintf("speed of NIC %s (%s) unknown: %g Gb/s assumed",
                                            net.name.c_str(), topo->nodes[nics[k]].id.c_str(),
                                            kDefaultNicGbps));
    }
    int index = topo->add_node(std::move(net));
    topo->connect(nics[k], index, LinkType::kNet, bw);
  }
}

void note_pci_assumptions(const Builder &b) {
  if (b.unknown_pci_links > 0) {
    b.topo->assumptions.push_back(strprintf(
        "PCIe link speed unknown for %d device(s): Gen3 x16 assumed", b.unknown_pci_links));
  }
  if (!b.unplaced_host_bridges.empty()) {
    std::string list;
    for (const std::string &id : b.unplaced_host_bridges) list += (list.empty() ? "" : ", ") + id;
    b.topo->assumptions.push_back(
        strprintf("NUMA node of PCI host bridge(s) %s unknown: attached to %s", list.c_str(),
                  b.topo->nodes[b.first_cpu].id.c_str()));
  }
}

Status add_hwloc_part(Topology *topo) {
  Hwloc hw;
  Status s = hw.load();
  if (is_error(s)) return s;
  Builder b;
  b.hw = hw.get();
  b.topo = topo;
  add_cpus(&b);
  add_pci_tree(&b);
  add_net_ports(topo);
  note_pci_assumptions(b);
  if (is_flat_pci_tree(*topo)) {
    topo->assumptions.push_back("flat PCI tree: GPUs attached to the host bridge (a VM?)");
  }
  return COHORT_SUCCESS;
}

// ---------------------------------------------------------------------- orchestration

void add_cuda_part(const DetectOptions &options, Topology *topo) {
  if (!options.use_cuda) return;
  CudaGpus cuda = detect_cuda_gpus();
  if (!cuda.none_why.empty()) {
    COHORT_LOG_INFO(TOPO, "no GPU visible to CUDA in this process (%s)", cuda.none_why.c_str());
  }
  merge_cuda_gpus(cuda, topo);
}

void add_nvml_part(const DetectOptions &options, Topology *topo) {
  std::vector<std::string> bus_ids;
  for (int gpu : topo->of_type(NodeType::kGpu)) bus_ids.push_back(topo->nodes[gpu].id);
  // NVLinks join GPUs (to each other or through NVSwitches): with one GPU on the host none
  // shapes a plan, and NVML's start (tens of ms) would be most of a first team's creation.
  if (bus_ids.size() < 2) return;
  constexpr const char *kPcieOnly = "NVLinks unknown, GPUs assumed PCIe-only";
  if (!options.use_nvml) {
    topo->assumptions.push_back(strprintf("NVML not used: %s", kPcieOnly));
    return;
  }
  std::vector<NvmlGpu> gpus;
  std::string why;
  if (!query_nvml(bus_ids, &gpus, &why)) {
    topo->assumptions.push_back(strprintf("NVML not available (%s): %s", why.c_str(), kPcieOnly));
    return;
  }
  add_nvlinks(gpus, topo);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

void log_summary(const Topology &topo, double ms) {
  int cuda_visible = 0;
  for (int gpu : topo.of_type(NodeType::kGpu)) cuda_visible += topo.nodes[gpu].cuda_device >= 0;
  COHORT_LOG_INFO(TOPO,
                  "topology of %s: %zu GPU(s) (%d visible to CUDA), %zu CPU(s), %zu PCI "
                  "switch(es), %zu NIC(s)%s, %zu links, %zu assumption(s); %.1f ms",
                  topo.host.c_str(), topo.of_type(NodeType::kGpu).size(), cuda_visible,
                  topo.of_type(NodeType::kCpu).size(), topo.of_type(NodeType::kPci).size(),
                  topo.of_type(NodeType::kNic).size(),
                  topo.of_type(NodeType::kNvSwitch).empty() ? "" : ", an NVSwitch fabric",
                  topo.links.size(), topo.assumptions.size(), ms);
  // With GPUs the assumptions shape the rings, so they are warnings (once per process: the
  // model is cached); without, nothing is planned from them.
  const bool shapes_plan = !topo.of_type(NodeType::kGpu).empty();
  for (const std::string &assumption : topo.assumptions) {
    if (shapes_plan) {
      COHORT_LOG_WARN(TOPO, "topology assumes: %s (cohort_info --topo shows the model)",
                      assumption.c_str());
    } else {
      COHORT_LOG_INFO(TOPO, "topology assumes: %s", assumption.c_str());
    }
  }
}

}  // namespace

Status detect(const DetectOptions &options, Topology *out) {
  const int64_t start = now_ns();
  Topology topo;
  topo.host = host_name();
  Status s = add_hwloc_part(&topo);
  if (is_error(s)) return s;
  const int64_t hwloc_done = now_ns();
  add_cuda_part(options, &topo);
  const int64_t cuda_done = now_ns();
  add_nvml_part(options, &topo);
  COHORT_LOG_INFO(TOPO, "topology detection: hwloc %.1f ms, CUDA %.1f ms, NVML %.1f ms",
                  (hwloc_done - start) / 1e6, (cuda_done - hwloc_done) / 1e6,
                  (now_ns() - cuda_done) / 1e6);
  canonicalize(&topo);
  if (is_error(validate(topo))) {
    const std::string problem = last_error();
    s = failf(COHORT_ERR_INTERNAL, "topology detection built an invalid model: %s",
              problem.c_str());
    COHORT_LOG_WARN(TOPO, "%s", last_error().c_str());
    return s;
  }
  log_summary(topo, static_cast<double>(now_ns() - start) / 1e6);
  *out = std::move(topo);
  return COHORT_SUCCESS;
}

}  // namespace cohort::topo
