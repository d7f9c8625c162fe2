// Reference topologies (test/data/topo) for unit tests, and small helpers over them.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "topo/paths.h"
#include "topo/search.h"
#include "topo/topo.h"
#include "topo/xml.h"

namespace cohort::topo {

// gtest prints path types by name ("NVB") rather than as bytes.
inline void PrintTo(PathType type, std::ostream *out) { *out << path_type_name(type); }

// Every file of test/data/topo (README.md there describes each).
inline constexpr const char *kReferenceMachines[] = {"v100-4gpu-allpairs.xml",
                                                     "h100-8gpu-nvswitch.xml",
                                                     "pcie-8gpu.xml",
                                                     "pcie-2gpu-sys.xml",
                                                     "vm-flat.xml",
                                                     "pcie-16gpu.xml",
                                                     "v100-8gpu-cubemesh.xml"};

inline std::string reference_path(const std::string &name) {
  return std::string(COHORT_TEST_DATA_DIR) + "/topo/" + name;
}

inline Topology load_reference(const std::string &name) {
  Topology topo;
  const std::string path = reference_path(name);
  Status s = read_xml_file(path, &topo);
  EXPECT_EQ(s, COHORT_SUCCESS) << path << ": " << last_error();
  return topo;
}

// Every GPU of the host is in use.
inline std::vector<int> all_gpus(const Topology &topo) { return topo.of_type(NodeType::kGpu); }

// The GPU-to-GPU hops of a ring (closing hop included when it does not leave the host).
inline std::vector<std::pair<int, int>> ring_hops(const NodeGraph &graph, size_t channel) {
  const std::vector<int> &ring = graph.rings[channel];
  std::vector<std::pair<int, int>> hops;
  bool leaves = channel < graph.nets.size() && graph.nets[channel] >= 0;
  size_t count = leaves ? ring.size() - 1 : ring.size();
  for (size_t i = 0; i < count && ring.size() > 1; ++i) {
    hops.push_back({ring[i], ring[(i + 1) % ring.size()]});
  }
  return hops;
}

// The node with this id, whatever its type (ids in these tests are unique across types).
inline int node_index(const Topology &topo, const std::string &id) {
  int found = -1;
  for (size_t i = 0; i < topo.nodes.size(); ++i) {
    if (topo.nodes[i].id != id) continue;
    EXPECT_EQ(found, -1) << "two nodes have the id " << id;
    found = static_cast<int>(i);
  }
  EXPECT_GE(found, 0) << "no node " << id;
  return found;
}

// GPUs a and b have an NVLink link of their own (not a route through a GPU, a switch or a CPU).
inline bool direct_nvlink(const Topology &topo, int a, int b) {
  const int l = topo.link_between(a, b);
  return l >= 0 && topo.links[l].type == LinkType::kNvLink;
}

// "0000:06:00.0 -> 0000:86:00.0 (NVB)", for messages.
inline std::string hop_text(const Topology &topo, const Paths &paths, int a, int b) {
  return topo.nodes[a].id + " -> " + topo.nodes[b].id + " (" +
         path_type_name(paths.get(a, b).type) + ")";
}

// The PCI switch (or CPU) a GPU hangs off.
inline int parent_of(const Topology &topo, int gpu) {
  for (int l : topo.nodes[gpu].links) {
    if (topo.links[l].type == LinkType::kPci) return topo.links[l].to;
  }
  return -1;
}

}  // namespace cohort::topo
