// Reference topologies (test/data/topo) for unit tests, and small helpers over them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topo/paths.h"
#include "topo/search.h"
#include "topo/topo.h"
#include "topo/xml.h"

namespace cohort::topo {

inline Topology load_reference(const std::string &name) {
  Topology topo;
  std::string path = std::string(COHORT_TEST_DATA_DIR) + "/topo/" + name;
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

// The PCI switch (or CPU) a GPU hangs off.
inline int parent_of(const Topology &topo, int gpu) {
  for (int l : topo.nodes[gpu].links) {
    if (topo.links[l].type == LinkType::kPci) return topo.links[l].to;
  }
  return -1;
}

}  // namespace cohort::topo
