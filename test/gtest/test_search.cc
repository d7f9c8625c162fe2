// Ring search on the reference topologies: properties that a wrong model or a wrong search
// breaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "topo/bandwidth.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

void expect_each_gpu_once(const NodeGraph &graph, const std::vector<int> &gpus) {
  ASSERT_FALSE(graph.rings.empty());
  for (const std::vector<int> &ring : graph.rings) {
    std::vector<int> sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, gpus);
  }
}

// Every GPU-to-GPU hop of every ring is an NVLink between the two GPUs.
void expect_direct_nvlink_hops(const Topology &topo, const Paths &paths, const NodeGraph &graph) {
  for (size_t c = 0; c < graph.rings.size(); ++c) {
    for (auto [a, b] : ring_hops(graph, c)) {
      EXPECT_TRUE(direct_nvlink(topo, a, b))
          << "channel " << c << ": " << hop_text(topo, paths, a, b);
    }
  }
}

NodeGraph search(const Topology &topo, const Paths &paths, bool cross_node = false) {
  SearchOptions options;
  options.cross_node = cross_node;
  return search_rings(topo, paths, all_gpus(topo), options);
}

}  // namespace

TEST(TopoSearch, NvSwitchRingsAreNvlinkAndFillTheLinks) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  Paths paths(topo);
  NodeGraph graph = search(topo, paths);
  expect_each_gpu_once(graph, all_gpus(topo));
  for (size_t c = 0; c < graph.rings.size(); ++c) {
    for (auto hop : ring_hops(graph, c)) {
      EXPECT_EQ(paths.get(hop.first, hop.second).type, PathType::kNvl) << "channel " << c;
    }
  }
  double gpu_nvlink = 18 * nvlink_bw(90);
  EXPECT_GE(graph.rings.size() * graph.bw, 0.9 * gpu_nvlink)
      << graph.rings.size() << " channels x " << graph.bw << " GB/s";
  EXPECT_GT(graph.rings.size(), 1u);
  EXPECT_EQ(graph.intra_type, PathType::kNvl);
  EXPECT_FALSE(graph.fallback);
}

TEST(TopoSearch, AllPairsEveryHopIsNvlink) {
  Topology topo = load_reference("v100-4gpu-allpairs.xml");
  Paths paths(topo);
  NodeGraph graph = search(topo, paths);
  expect_each_gpu_once(graph, all_gpus(topo));
  for (size_t c = 0; c < graph.rings.size(); ++c) {
    for (auto hop : ring_hops(graph, c)) {
      EXPECT_EQ(paths.get(hop.first, hop.second).type, PathType::kNvl);
      EXPECT_EQ(paths.get(hop.first, hop.second).hops, 1);
    }
  }
  // 12 directed pair links of 40 GB/s, 4 per ring: six rings of 20 fill every one.
  EXPECT_DOUBLE_EQ(graph.rings.size() * graph.bw, 12 * 2 * nvlink_bw(70) / 4);
}

// DGX-1-class hybrid cube-mesh: 16 of the 28 GPU pairs have NVLinks of their own; the others
// are NVB, so a ring hop between them spends NVLinks of the GPUs it passes through.
TEST(TopoSearch, CubeMeshRingsHopOnlyOverDirectNvlinks) {
  Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  Paths paths(topo);
  NodeGraph graph = search(topo, paths);
  expect_each_gpu_once(graph, all_gpus(topo));
  expect_direct_nvlink_hops(topo, paths, graph);
  EXPECT_EQ(graph.intra_type, PathType::kNvl);
  // A GPU's six NVLinks carry 120 GB/s out of it: the rings use at least 90% and no more.
  const double links_out = 6 * nvlink_bw(70);
  EXPECT_GE(graph.rings.size() * graph.bw, 0.9 * links_out)
      << graph.rings.size() << " channels x " << graph.bw << " GB/s";
  EXPECT_LE(graph.rings.size() * graph.bw, links_out + 1e-9);
  EXPECT_FALSE(graph.fallback);
}

// Seven GPUs of the cube-mesh (0000:0b:00.0 left out): 4 rings of 20 GB/s fit with or without
// NVB hops; among rings of equal bandwidth the search keeps those without.
TEST(TopoSearch, CubeMeshTeamOfSevenPrefersDirectHopsAtEqualBandwidth) {
  Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  Paths paths(topo);
  std::vector<int> seven = all_gpus(topo);
  seven.erase(std::find(seven.begin(), seven.end(), node_index(topo, "0000:0b:00.0")));
  NodeGraph graph = search_rings(topo, paths, seven, SearchOptions{});
  expect_each_gpu_once(graph, seven);
  expect_direct_nvlink_hops(topo, paths, graph);
  EXPECT_DOUBLE_EQ(graph.rings.size() * graph.bw, 4 * nvlink_bw(70));
}

TEST(TopoSearch, PcieBoxCrossesTheCpuLinkTwiceAndKeepsSwitchPairsAdjacent) {
  Topology topo = load_reference("pcie-8gpu.xml");
  Paths paths(topo);
  NodeGraph graph = search(topo, paths);
  expect_each_gpu_once(graph, all_gpus(topo));
  for (size_t c = 0; c < graph.rings.size(); ++c) {
    int sys = 0;
    for (auto hop : ring_hops(graph, c))
      sys += paths.get(hop.first, hop.second).type == PathType::kSys;
    EXPECT_EQ(sys, 2) << "channel " << c << ": a ring over two CPUs crosses at least twice";
    const std::vector<int> &ring = graph.rings[c];
    for (size_t i = 0; i < ring.size(); ++i) {
      int g = ring[i];
      int before = ring[(i + ring.size() - 1) % ring.size()];
      int after = ring[(i + 1) % ring.size()];
      bool neighbour_shares = parent_of(topo, before) == parent_of(topo, g) ||
                              parent_of(topo, after) == parent_of(topo, g);
      EXPECT_TRUE(neighbour_shares) << "GPU " << topo.nodes[g].id << " in channel " << c;
    }
  }
  EXPECT_EQ(graph.intra_type, PathType::kSys);
}

TEST(TopoSearch, TwoGpuSysBoxStillGetsARing) {
  Topology topo = load_reference("pcie-2gpu-sys.xml");
  Paths paths(topo);
  NodeGraph graph = search(topo, paths);
  expect_each_gpu_once(graph, all_gpus(topo));
  EXPECT_EQ(graph.intra_type, PathType::kSys);
  EXPECT_LE(graph.rings.size() * graph.bw, cpu_link_bw("intel") + 1e-9);
}

TEST(TopoSearch, CrossNodeRingsEnterAndLeaveNextToTheirNic) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  Paths paths(topo);
  NodeGraph graph = search(topo, paths, true);
  expect_each_gpu_once(graph, all_gpus(topo));
  std::set<int> nets;
  for (size_t c = 0; c < graph.rings.size(); ++c) {
    ASSERT_GE(graph.nets[c], 0);
    nets.insert(graph.nets[c]);
    EXPECT_EQ(paths.get(graph.rings[c].front(), graph.nets[c]).type, PathType::kPix);
    EXPECT_EQ(paths.get(graph.rings[c].back(), graph.nets[c]).type, PathType::kPix);
  }
  EXPECT_GE(nets.size(), std::min<size_t>(graph.rings.size(), 8)) << "channels spread over NICs";
  EXPECT_EQ(graph.net_type, PathType::kPix);
  EXPECT_LE(graph.bw, nic_bw(400) + 1e-9);
}

// Rings leave the host on every reference machine with a NIC, within the port's bandwidth.
TEST(TopoSearch, CrossNodeRingsOnEveryMachineWithANic) {
  for (const char *name : kReferenceMachines) {
    Topology topo = load_reference(name);
    if (topo.of_type(NodeType::kNet).empty()) continue;
    Paths paths(topo);
    NodeGraph graph = search(topo, paths, true);
    SCOPED_TRACE(name);
    expect_each_gpu_once(graph, all_gpus(topo));
    EXPECT_FALSE(graph.fallback);
    double port_bw = 0;
    for (int net : topo.of_type(NodeType::kNet)) port_bw += nic_bw(topo.nodes[net].speed_gbps);
    EXPECT_LE(graph.rings.size() * graph.bw, port_bw + 1e-9);
    for (size_t c = 0; c < graph.rings.size(); ++c) ASSERT_GE(graph.nets[c], 0);
  }
}

TEST(TopoSearch, SixteenPcieGpusDoNotExhaustTheBudget) {
  Topology topo = load_reference("pcie-16gpu.xml");
  Paths paths(topo);
  for (bool cross : {false, true}) {
    NodeGraph graph = search(topo, paths, cross);
    expect_each_gpu_once(graph, all_gpus(topo));
    EXPECT_FALSE(graph.fallback);
    EXPECT_LT(graph.steps, SearchOptions{}.budget / 4) << "cross " << cross;
    EXPECT_DOUBLE_EQ(graph.rings.size() * graph.bw, cpu_link_bw("amd"));
    for (size_t c = 0; c < graph.rings.size(); ++c) {
      int sys = 0;
      for (auto hop : ring_hops(graph, c))
        sys += paths.get(hop.first, hop.second).type == PathType::kSys;
      EXPECT_LE(sys, 2);
    }
  }
}

TEST(TopoSearch, GpusWithoutAPathNeverShareARing) {
  Topology topo;
  ASSERT_EQ(from_xml("<cohort_topology version='1' host='dis'>"
                     "<cpu id='cpu0' numa='0'/><cpu id='cpu1' numa='1'/>"
                     "<gpu id='0000:17:00.0' sm='80'/><gpu id='0000:ca:00.0' sm='80'/>"
                     "<link a='0000:17:00.0' b='cpu0' type='pci' gen='4' width='16'/>"
                     "<link a='0000:ca:00.0' b='cpu1' type='pci' gen='4' width='16'/>"
                     "</cohort_topology>",
                     "dis", &topo),
            COHORT_SUCCESS)
      << last_error();
  Paths paths(topo);
  std::vector<int> gpus = all_gpus(topo);
  EXPECT_EQ(paths.get(gpus[0], gpus[1]).type, PathType::kDis);
  NodeGraph graph = search(topo, paths);
  EXPECT_TRUE(graph.fallback);  // nothing fits: a fixed order, flagged and logged
  EXPECT_EQ(graph.rings.size(), 1u);
  EXPECT_EQ(graph.intra_type, PathType::kDis);
}

TEST(TopoSearch, OneGpuAcrossHostsWithoutANicKeepsTwoChannels) {
  Topology topo = load_reference("pcie-2gpu-sys.xml");
  Paths paths(topo);
  SearchOptions options;
  options.cross_node = true;
  NodeGraph graph = search_rings(topo, paths, {all_gpus(topo)[0]}, options);
  EXPECT_EQ(graph.rings.size(), 2u);
}

TEST(TopoSearch, TinyBudgetFallsBackDeterministically) {
  Topology topo = load_reference("pcie-8gpu.xml");
  Paths paths(topo);
  SearchOptions options;
  options.budget = 3;
  NodeGraph a = search_rings(topo, paths, all_gpus(topo), options);
  NodeGraph b = search_rings(topo, paths, all_gpus(topo), options);
  EXPECT_TRUE(a.fallback);
  EXPECT_EQ(a.rings, b.rings);
  EXPECT_EQ(a.steps, 3);
  expect_each_gpu_once(a, all_gpus(topo));
  EXPECT_GT(a.bw, 0);
}

TEST(TopoSearch, SubsetOfGpusAndSingleGpu) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  Paths paths(topo);
  std::vector<int> gpus = all_gpus(topo);
  std::vector<int> three(gpus.begin(), gpus.begin() + 3);
  NodeGraph graph = search_rings(topo, paths, three, SearchOptions{});
  expect_each_gpu_once(graph, three);
  NodeGraph one = search_rings(topo, paths, {gpus[0]}, SearchOptions{});
  ASSERT_EQ(one.rings.size(), 2u);
  EXPECT_EQ(one.rings[0], std::vector<int>{gpus[0]});
  EXPECT_TRUE(search_rings(topo, paths, {}, SearchOptions{}).rings.empty());
}

// The budget counts hop evaluations.  256 GPUs on one CPU (the most a host may have): each
// GPU's one link carries one ring at its full rate, found by taking the first fit at every hop,
// which weighs 255 + 254 + ... + 1 candidates, tries one a hop and the closing hop.
TEST(TopoSearch, MostGpusAHostMayHaveFindTheBestRingFast) {
  const Topology topo = gpus_on_one_cpu(256);
  const Paths paths(topo);
  NodeGraph graph;
  EXPECT_LT(seconds_of([&] { graph = search(topo, paths); }), 1.0);
  EXPECT_FALSE(graph.fallback);
  ASSERT_EQ(graph.rings.size(), 1u);
  EXPECT_DOUBLE_EQ(graph.bw, pci_bw(4, 16));
  expect_each_gpu_once(graph, all_gpus(topo));
  EXPECT_EQ(graph.steps, 255 * 256 / 2 + 255 + 1);
}

// Beyond what a file may describe the search still ends within its budget of work; a budget
// large enough for the ring's ~500k hop evaluations finds it.
TEST(TopoSearch, ThousandGpusStayWithinTheBudget) {
  const Topology topo = gpus_on_one_cpu(1000);
  const Paths paths(topo);
  NodeGraph graph;
  EXPECT_LT(seconds_of([&] { graph = search(topo, paths); }), 1.0);
  EXPECT_LE(graph.steps, SearchOptions{}.budget);
  EXPECT_TRUE(graph.fallback);
  expect_each_gpu_once(graph, all_gpus(topo));
  SearchOptions ample;
  ample.budget = 50 * kDefaultSearchBudget;
  graph = search_rings(topo, paths, all_gpus(topo), ample);
  EXPECT_FALSE(graph.fallback);
  EXPECT_EQ(graph.steps, 999 * 1000 / 2 + 1000);
  EXPECT_DOUBLE_EQ(graph.bw, pci_bw(4, 16));
}

}  // namespace cohort::topo
