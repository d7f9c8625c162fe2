// Reference topologies (test/data/topo) for unit tests, and small helpers over them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "topo/bandwidth.h"
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

// Seconds `work` takes.
template <typename Work>
double seconds_of(Work work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The k-th of many distinct PCI bus ids (k < 2^16 x 256).
inline std::string nth_bus_id(int k) {
  return strprintf("%04x:%02x:%02x.0", k / (256 * 32), (k / 32) % 256, k % 32);
}

// `gpus` GPUs on one CPU, each on its own PCIe Gen4 x16 link, built in code (files stop at
// 256 GPUs).
inline Topology gpus_on_one_cpu(int gpus) {
  Topology topo;
  Node cpu;
  cpu.id = "cpu0";
  cpu.numa = 0;
  cpu.vendor = "intel";
  const int c = topo.add_node(cpu);
  for (int g = 0; g < gpus; ++g) {
    Node gpu;
    gpu.type = NodeType::kGpu;
    gpu.id = nth_bus_id(g + 1);
    gpu.sm = 90;
    topo.connect(c, topo.add_node(gpu), LinkType::kPci, pci_bw(4, 16), -1, 1, 4, 16);
  }
  return topo;
}

// A host of `nodes` nodes (>= 30) as topology file text, one element a line, the k-th node on
// line k + 1: a CPU, a tree of PCIe switches (four below each), then 16 GPUs and 4 NICs below
// the last switches, and the NICs' ports.
inline std::string pcie_tree_xml(int nodes) {
  constexpr int kGpus = 16, kNics = 4;
  const int switches = nodes - 1 - kGpus - 2 * kNics;
  std::string text = "<cohort_topology version=\"1\" host=\"tree\">\n";
  text += "<cpu id=\"cpu0\" numa=\"0\" arch=\"x86_64\" vendor=\"intel\"/>\n";
  std::string links;
  auto link = [&](const std::string &a, const std::string &b, const char *type) {
    links += "<link a=\"" + a + "\" b=\"" + b + "\" type=\"" + type + "\"/>\n";
  };
  for (int i = 0; i < switches; ++i) {
    text += "<pci id=\"" + nth_bus_id(i + 1) + "\"/>\n";
    link(i == 0 ? "cpu0" : nth_bus_id((i - 1) / 4 + 1), nth_bus_id(i + 1), "pci");
  }
  for (int k = 0; k < kGpus + kNics; ++k) {
    const std::string id = nth_bus_id(switches + 1 + k);
    text += (k < kGpus ? "<gpu id=\"" : "<nic speed=\"400\" id=\"") + id + "\"/>\n";
    link(nth_bus_id(switches - kGpus - kNics + k + 1), id, "pci");
    if (k >= kGpus) link(id, "net" + std::to_string(k), "net");
  }
  for (int k = kGpus; k < kGpus + kNics; ++k)
    text += "<net id=\"net" + std::to_string(k) + "\"/>\n";
  return text + links + "</cohort_topology>\n";
}

}  // namespace cohort::topo
