#include "topo/rules.h"

#include <deque>
#include <iterator>

namespace cohort::topo::rules {
namespace {

struct KindLimit {
  NodeType type;
  int max;
  const char *name;
};
// Generous against real hosts: 8-16 GPUs (NVL72 racks are 4 GPUs per host), one NVSwitch
// fabric (NVSwitches of a host form one fabric, the model's one node), up to 32 NUMA domains
// with cores (8 sockets x 4 sub-NUMA clusters), a NIC and a port per PCIe function even with
// SR-IOV functions listed.  GPUs also bound a ring search (O(GPUs^2) hop evaluations a ring).
// Indexed by NodeType.
constexpr KindLimit kKindLimits[] = {
    {NodeType::kGpu, 256, "GPUs per host"},
    {NodeType::kNvSwitch, 1, "NVSwitch fabric per host"},
    {NodeType::kPci, 0, "PCI switches per host"},
    {NodeType::kCpu, 64, "CPUs per host"},
    {NodeType::kNic, 256, "NICs per host"},
    {NodeType::kNet, 256, "network ports per host"},
};
static_assert(std::size(kKindLimits) == static_cast<size_t>(NodeType::kCount));

// The node kinds each link type joins, in either order: the model's links (topo.h), as
// detection builds them.  NVLink to a CPU (IBM's NPU, Grace's C2C) is not modelled.
struct LinkEnds {
  LinkType type;
  NodeType a, b;
};
constexpr LinkEnds kAllowedLinks[] = {
    {LinkType::kNvLink, NodeType::kGpu, NodeType::kGpu},
    {LinkType::kNvLink, NodeType::kGpu, NodeType::kNvSwitch},
    {LinkType::kPci, NodeType::kGpu, NodeType::kPci},
    {LinkType::kPci, NodeType::kGpu, NodeType::kCpu},
    {LinkType::kPci, NodeType::kNic, NodeType::kPci},
    {LinkType::kPci, NodeType::kNic, NodeType::kCpu},
    {LinkType::kPci, NodeType::kPci, NodeType::kPci},
    {LinkType::kPci, NodeType::kPci, NodeType::kCpu},
    {LinkType::kCpu, NodeType::kCpu, NodeType::kCpu},
    {LinkType::kNet, NodeType::kNic, NodeType::kNet},
};
// What the rows of each link type say, indexed by LinkType.
constexpr const char *kLinkJoins[] = {
    "an nvlink link must join a GPU to a GPU or to the NVSwitch fabric",
    "a pci link must join a GPU, NIC or PCI switch to its parent PCI switch or CPU",
    "a cpu link must join two CPUs",
    "a net link must join a NIC to its network port",
};
static_assert(std::size(kLinkJoins) == static_cast<size_t>(LinkType::kCount));

}  // namespace

int max_nodes_of(NodeType type) { return kKindLimits[static_cast<int>(type)].max; }
const char *limit_name(NodeType type) { return kKindLimits[static_cast<int>(type)].name; }

const char *link_ends_problem(LinkType type, NodeType a, NodeType b) {
  for (const LinkEnds &row : kAllowedLinks) {
    if (row.type == type && ((row.a == a && row.b == b) || (row.a == b && row.b == a))) {
      return nullptr;
    }
  }
  return kLinkJoins[static_cast<int>(type)];
}

std::vector<int> gpus_without_cpu(const Topology &topo) {
  std::vector<bool> reached(topo.nodes.size(), false);
  std::deque<int> queue;
  for (int cpu : topo.of_type(NodeType::kCpu)) {
    reached[cpu] = true;
    queue.push_back(cpu);
  }
  while (!queue.empty()) {  // the PCI tree below the CPUs; only switches lead further down
    const int node = queue.front();
    queue.pop_front();
    for (int l : topo.nodes[node].links) {
      const Link &link = topo.links[l];
      if (link.type != LinkType::kPci || reached[link.to]) continue;
      reached[link.to] = true;
      if (topo.nodes[link.to].type == NodeType::kPci) queue.push_back(link.to);
    }
  }
  std::vector<int> out;
  for (int gpu : topo.of_type(NodeType::kGpu)) {
    if (!reached[gpu]) out.push_back(gpu);
  }
  return out;
}

}  // namespace cohort::topo::rules
