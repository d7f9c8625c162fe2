// The topology model of one host: GPUs, the NVSwitch fabric, PCI switches and bridges, CPUs
// (one per NUMA domain), NICs and their network ports, joined by directed links that carry a
// type and a bandwidth per direction.  Detection (detect.h) and XML loading (xml.h) build it;
// paths (paths.h) and graph search (search.h) read it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cohort::topo {

enum class NodeType : uint8_t {
  kGpu,
  kNvSwitch,  // the whole NVSwitch fabric of a host is one node, as in NCCL
  kPci,       // a PCIe switch or bridge (a CPU's host bridge is the CPU node itself)
  kCpu,       // one NUMA domain: its cores, memory and root ports
  kNic,
  kNet,  // the network side of a NIC port
  kCount
};

enum class LinkType : uint8_t {
  kNvLink,  // GPU-GPU or GPU-NVSwitch; `count` NVLinks in one link
  kPci,     // PCIe, between a device or switch and its parent
  kCpu,     // the CPU-CPU interconnect (UPI, xGMI, ...)
  kNet,     // NIC to its network port
  kCount
};

// Path types, best first (NCCL's order).  A path's type is the worst step on it.
enum class PathType : uint8_t {
  kLoc,  // the same device
  kNvl,  // NVLink, directly or through the NVSwitch fabric
  kNvb,  // NVLink through an intermediate GPU
  kPix,  // through at most one PCIe switch
  kPxb,  // through several PCIe switches, not through a CPU
  kPhb,  // through a CPU's host bridge
  kSys,  // across the CPU-CPU interconnect
  kNet,  // across the network (another host)
  kDis,  // no path
  kCount
};

// How bytes between two GPUs (or a GPU and a NIC) would move.
enum class Transport : uint8_t { kP2p, kShm, kNet, kCount };

const char *node_type_name(NodeType type);  // "gpu", "nvswitch", "pci", "cpu", "nic", "net"
const char *link_type_name(LinkType type);  // "nvlink", "pci", "cpu", "net"
const char *path_type_name(PathType type);  // "LOC", "NVL", "NVB", "PIX", ...
const char *transport_name(Transport t);    // "P2P", "SHM", "NET"
// Names back to values; false for anything else.  Node type names are the topology file's
// element names and match exactly ("gpu", not "GPU"); link and path type names in any case.
bool node_type_from_name(const std::string &name, NodeType *out);
bool link_type_from_name(const std::string &name, LinkType *out);
bool path_type_from_name(const std::string &name, PathType *out);

struct Link {
  int from = -1;  // node indices
  int to = -1;
  LinkType type = LinkType::kPci;
  double bw = 0;    // GB/s from -> to
  int count = 1;    // NVLinks joined in this link
  int pci_gen = 0;  // PCIe generation and width, when known
  int pci_width = 0;
};

struct Node {
  NodeType type = NodeType::kCpu;
  // Unique within the host: the PCI bus id ("0000:17:00.0") for PCI devices, "cpu<N>" for a
  // CPU (N = its NUMA node, or its order when NUMA is unknown), "nvswitch", "net<N>".
  std::string id;
  // GPU
  int sm = 0;            // compute capability x 10 (90 for sm_90); 0 unknown
  std::string uuid;      // 32 hex digits; empty unknown
  int cuda_device = -1;  // ordinal in this process; -1: not visible to it
  // CPU
  int numa = -1;       // -1 unknown
  std::string arch;    // "x86_64", "aarch64", "ppc64"
  std::string vendor;  // "intel", "amd", "nvidia", ...
  // NIC / NET
  std::string name;  // "mlx5_0", "eth0"
  double speed_gbps = 0;
  // Directed links leaving this node (indices into Topology::links).
  std::vector<int> links;
};

struct Topology {
  std::string host;  // label for messages and dumps
  std::vector<Node> nodes;
  std::vector<Link> links;
  // What detection could not see and assumed instead ("NUMA unknown: one CPU assumed"),
  // reported once by cohort_info and in the log.
  std::vector<std::string> assumptions;
  // GPU pairs (ids) that the CUDA runtime reports without peer access: they use SHM whatever
  // their path type.
  std::vector<std::pair<std::string, std::string>> no_p2p;

  int add_node(Node node);  // returns its index
  // Adds the two directions of a link: `bw` from a to b, `bw_back` (or `bw` when < 0) back.
  void connect(int a, int b, LinkType type, double bw, double bw_back = -1, int count = 1,
               int pci_gen = 0, int pci_width = 0);
  int find(NodeType type, const std::string &id) const;  // -1 if absent
  std::vector<int> of_type(NodeType type) const;         // node indices, in index order
  // The link a -> b, or -1.
  int link_between(int a, int b) const;
};

// A PCI bus id in the model's form: lower-case "dddd:bb:dd.f" ("0000:B1:00.0" and
// "B1:00.0" both give "0000:b1:00.0"); empty when `text` is not a bus id.
std::string normalize_bus_id(const std::string &text);

// Sorts nodes into a canonical order (type, then id) and renumbers links, so that two
// detections of one machine, or a dump and its reload, are identical.
void canonicalize(Topology *topo);

// Checks the model is usable: ids unique, links between existing nodes in both directions
// with positive bandwidth, GPUs reachable from some CPU.  Names the first problem.
Status validate(const Topology &topo);

}  // namespace cohort::topo
