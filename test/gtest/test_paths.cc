// Paths between the nodes of one host (src/topo/paths.h) on the reference machines and on
// small hand-written ones: type, bandwidth, hop count and route of chosen pairs, and the
// transport a GPU pair takes at each P2P level.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "topo/bandwidth.h"
#include "topo/rules.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

Topology parse(const std::string &text) {
  Topology topo;
  EXPECT_EQ(from_xml(text, "test.xml", &topo), COHORT_SUCCESS) << last_error();
  return topo;
}

// The route from -> to as the ids of the nodes it reaches, in order.
std::vector<std::string> route_ids(const Topology &topo, const Paths &paths, int from, int to) {
  std::vector<std::string> ids;
  for (int l : paths.route(from, to)) ids.push_back(topo.nodes[topo.links[l].to].id);
  return ids;
}

// Ordered GPU pairs that take P2P.
int p2p_pairs(const Topology &topo, const Paths &paths) {
  int count = 0;
  for (int a : all_gpus(topo)) {
    for (int b : all_gpus(topo)) count += a != b && paths.gpu_transport(a, b) == Transport::kP2p;
  }
  return count;
}

PathOptions at_level(const char *name) {
  PathOptions options;
  EXPECT_TRUE(path_type_from_name(name, &options.p2p_level)) << name;
  return options;
}

}  // namespace

// Whatever the machine: a route is a walk of `hops` links from the source to the target, its
// narrowest link is the path's bandwidth, and a pair's type is the same both ways.
TEST(TopoPaths, EveryRouteWalksFromSourceToTargetAtThePathsWidth) {
  for (const char *name : kReferenceMachines) {
    SCOPED_TRACE(name);
    Topology topo = load_reference(name);
    Paths paths(topo);
    const int n = static_cast<int>(topo.nodes.size());
    for (int a = 0; a < n; ++a) {
      if (!paths.is_source(a)) continue;
      EXPECT_EQ(paths.get(a, a).type, PathType::kLoc);
      EXPECT_TRUE(paths.route(a, a).empty());
      for (int b = 0; b < n; ++b) {
        const Path &path = paths.get(a, b);
        if (a == b || path.type == PathType::kDis) continue;
        SCOPED_TRACE(topo.nodes[a].id + " -> " + topo.nodes[b].id);
        std::vector<int> route = paths.route(a, b);
        ASSERT_EQ(static_cast<int>(route.size()), path.hops);
        double narrowest = 1e300;
        int at = a;
        for (int l : route) {
          ASSERT_EQ(topo.links[l].from, at);
          at = topo.links[l].to;
          narrowest = std::min(narrowest, topo.links[l].bw);
        }
        EXPECT_EQ(at, b);
        EXPECT_DOUBLE_EQ(path.bw, narrowest);
        if (paths.is_source(b)) {
          EXPECT_EQ(path.type, paths.get(b, a).type);
        }
      }
    }
  }
}

// Paths leave GPUs, CPUs, NICs and network ports; switches only relay, and have no row.
TEST(TopoPaths, OnlyEndpointsAreSources) {
  for (const char *name : kReferenceMachines) {
    SCOPED_TRACE(name);
    Topology topo = load_reference(name);
    Paths paths(topo);
    for (size_t a = 0; a < topo.nodes.size(); ++a) {
      const NodeType type = topo.nodes[a].type;
      const bool relay_only = type == NodeType::kPci || type == NodeType::kNvSwitch;
      EXPECT_EQ(paths.is_source(static_cast<int>(a)), !relay_only) << topo.nodes[a].id;
      if (!relay_only) continue;
      EXPECT_EQ(paths.get(static_cast<int>(a), 0).type, PathType::kDis);
      EXPECT_TRUE(paths.route(static_cast<int>(a), 0).empty());
    }
  }
}

TEST(TopoPaths, NvSwitchHost) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  Paths paths(topo);
  std::vector<int> gpus = all_gpus(topo);
  ASSERT_EQ(gpus.size(), 8u);
  for (int a : gpus) {
    for (int b : gpus) {
      const Path &p = paths.get(a, b);
      if (a == b) {
        EXPECT_EQ(p.type, PathType::kLoc);
        continue;
      }
      EXPECT_EQ(p.type, PathType::kNvl) << topo.nodes[a].id << " " << topo.nodes[b].id;
      EXPECT_DOUBLE_EQ(p.bw, 18 * nvlink_bw(90));
      EXPECT_EQ(p.hops, 2);  // through the switch fabric
      EXPECT_EQ(paths.gpu_transport(a, b), Transport::kP2p);
    }
  }
  // Each NIC shares a PCIe switch with two GPUs (PIX), the other switch of its CPU is PHB,
  // the other CPU SYS.
  std::vector<int> nics = topo.of_type(NodeType::kNic);
  ASSERT_EQ(nics.size(), 8u);
  for (int nic : nics) {
    std::map<PathType, int> by_type;
    for (int g : gpus) by_type[paths.get(g, nic).type]++;
    EXPECT_EQ(by_type[PathType::kPix], 2) << topo.nodes[nic].id;
    EXPECT_EQ(by_type[PathType::kPhb], 2) << topo.nodes[nic].id;
    EXPECT_EQ(by_type[PathType::kSys], 4) << topo.nodes[nic].id;
  }
}

TEST(TopoPaths, PcieBoxTypes) {
  Topology topo = load_reference("pcie-8gpu.xml");
  Paths paths(topo);
  std::vector<int> gpus = all_gpus(topo);
  ASSERT_EQ(gpus.size(), 8u);
  std::map<PathType, int> by_type;
  for (int a : gpus) {
    for (int b : gpus) {
      if (a == b) continue;
      PathType t = paths.get(a, b).type;
      by_type[t]++;
      bool same_switch = parent_of(topo, a) == parent_of(topo, b);
      EXPECT_EQ(t == PathType::kPix, same_switch);
    }
  }
  // Ordered pairs: 8 under a shared switch, 16 under one CPU, 32 across CPUs.
  EXPECT_EQ(by_type[PathType::kPix], 8);
  EXPECT_EQ(by_type[PathType::kPhb], 16);
  EXPECT_EQ(by_type[PathType::kSys], 32);
  EXPECT_EQ(by_type.size(), 3u);
}

TEST(TopoPaths, TwoGpusOnTwoCpusUseShmUnlessP2pLevelAllowsSys) {
  Topology topo = load_reference("pcie-2gpu-sys.xml");
  std::vector<int> gpus = all_gpus(topo);
  ASSERT_EQ(gpus.size(), 2u);
  Paths paths(topo);
  EXPECT_EQ(paths.get(gpus[0], gpus[1]).type, PathType::kSys);
  EXPECT_EQ(paths.gpu_transport(gpus[0], gpus[1]), Transport::kShm);
  EXPECT_EQ(paths.gpu_transport(gpus[0], gpus[0]), Transport::kP2p);
  PathOptions sys;
  sys.p2p_level = PathType::kSys;
  EXPECT_EQ(Paths(topo, sys).gpu_transport(gpus[0], gpus[1]), Transport::kP2p);
  // A pair the CUDA runtime refuses stays SHM at any level.
  topo.no_p2p.push_back({topo.nodes[gpus[0]].id, topo.nodes[gpus[1]].id});
  EXPECT_EQ(Paths(topo, sys).gpu_transport(gpus[0], gpus[1]), Transport::kShm);
}

TEST(TopoPaths, AllPairsNvlinkIsDirect) {
  Topology topo = load_reference("v100-4gpu-allpairs.xml");
  Paths paths(topo);
  for (int a : all_gpus(topo)) {
    for (int b : all_gpus(topo)) {
      if (a == b) continue;
      EXPECT_EQ(paths.get(a, b).type, PathType::kNvl);
      EXPECT_EQ(paths.get(a, b).hops, 1);
      EXPECT_DOUBLE_EQ(paths.get(a, b).bw, 2 * nvlink_bw(70));
    }
  }
}

TEST(TopoPaths, FlatVmGoesThroughTheHostBridge) {
  Topology topo = load_reference("vm-flat.xml");
  Paths paths(topo);
  std::vector<int> gpus = all_gpus(topo);
  ASSERT_GE(gpus.size(), 2u);
  EXPECT_EQ(paths.get(gpus[0], gpus[1]).type, PathType::kPhb);
  EXPECT_FALSE(topo.assumptions.empty());
}

// A direct NVLink is NVL even where a route through other GPUs would be wider: type comes
// before width.  Pairs without a link of their own are NVB over the widest route.
TEST(TopoPaths, CubeMeshDirectNvlinkBeatsAWiderRouteThroughGpus) {
  Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  Paths paths(topo);
  const int gpu0 = node_index(topo, "0000:06:00.0");
  const int gpu1 = node_index(topo, "0000:07:00.0");
  const int gpu5 = node_index(topo, "0000:86:00.0");
  const int gpu7 = node_index(topo, "0000:8a:00.0");
  const Path &single = paths.get(gpu0, gpu1);  // one NVLink; 06-0b-0a-07 has two each
  EXPECT_EQ(single.type, PathType::kNvl);
  EXPECT_EQ(single.hops, 1);
  EXPECT_DOUBLE_EQ(single.bw, nvlink_bw(70));
  const Path &through = paths.get(gpu0, gpu7);
  EXPECT_EQ(through.type, PathType::kNvb);
  EXPECT_DOUBLE_EQ(through.bw, 2 * nvlink_bw(70));
  EXPECT_EQ(route_ids(topo, paths, gpu0, gpu7),
            (std::vector<std::string>{"0000:85:00.0", "0000:8a:00.0"}));
  // 06 and 86 share only neighbours joined by single links (07, 85): the doubled route is 4 long.
  const Path &far = paths.get(gpu0, gpu5);
  EXPECT_EQ(far.type, PathType::kNvb);
  EXPECT_EQ(far.hops, 4);
  EXPECT_DOUBLE_EQ(far.bw, 2 * nvlink_bw(70));
  for (int l : paths.route(gpu0, gpu5)) {
    EXPECT_EQ(topo.links[l].type, LinkType::kNvLink);
    EXPECT_EQ(topo.links[l].count, 2);
  }
  std::map<PathType, int> by_type;
  for (int a : all_gpus(topo)) {
    for (int b : all_gpus(topo)) {
      if (a != b) by_type[paths.get(a, b).type]++;
    }
  }
  EXPECT_EQ(by_type[PathType::kNvl], 32);  // 16 linked pairs, both ways
  EXPECT_EQ(by_type[PathType::kNvb], 24);
}

// A GPU relays only NVLink to NVLink: 06 reaches the NIC on 0a's switch through the CPU (PHB),
// not over its NVLink to 0a and 0a's PCIe link.
TEST(TopoPaths, CubeMeshGpuToNicPathsStayOnThePciTree) {
  Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  Paths paths(topo);
  const int gpu0 = node_index(topo, "0000:06:00.0");
  const int own_nic = node_index(topo, "0000:05:00.0");     // mlx5_0, the same switch
  const int socket_nic = node_index(topo, "0000:0c:00.0");  // mlx5_1, 0a and 0b's switch
  const int far_nic = node_index(topo, "0000:84:00.0");     // mlx5_2, the other socket
  EXPECT_EQ(paths.get(gpu0, own_nic).type, PathType::kPix);
  EXPECT_EQ(paths.get(gpu0, own_nic).hops, 2);
  EXPECT_DOUBLE_EQ(paths.get(gpu0, own_nic).bw, pci_bw(3, 16));
  EXPECT_EQ(paths.get(gpu0, socket_nic).type, PathType::kPhb);
  EXPECT_EQ(route_ids(topo, paths, gpu0, socket_nic),
            (std::vector<std::string>{"0000:03:00.0", "cpu0", "0000:08:00.0", "0000:0c:00.0"}));
  EXPECT_EQ(paths.get(gpu0, far_nic).type, PathType::kSys);
  EXPECT_DOUBLE_EQ(paths.get(gpu0, far_nic).bw, cpu_link_bw("intel"));
  // To the network port: through the NIC, as wide as the port.
  const int port = node_index(topo, "net0");
  EXPECT_EQ(paths.get(gpu0, port).type, PathType::kPix);
  EXPECT_EQ(paths.get(port, gpu0).type, PathType::kPix);
  EXPECT_DOUBLE_EQ(paths.get(gpu0, port).bw, nic_bw(100));
  EXPECT_EQ(route_ids(topo, paths, port, gpu0),
            (std::vector<std::string>{"0000:05:00.0", "0000:03:00.0", "0000:06:00.0"}));
}

// Across sockets the CPU link is the narrow part (AMD 16 GB/s under Gen4 x16's 25.2), and the
// route crosses it once.
TEST(TopoPaths, PcieBoxRoutesCrossTheCpuLinkOnceAtItsWidth) {
  Topology topo = load_reference("pcie-8gpu.xml");
  Paths paths(topo);
  std::vector<int> gpus = all_gpus(topo);
  const int cpu0 = node_index(topo, "cpu0");
  const int cpu1 = node_index(topo, "cpu1");
  for (int a : gpus) {
    for (int b : gpus) {
      if (a == b) continue;
      const Path &path = paths.get(a, b);
      int crossings = 0;
      for (int l : paths.route(a, b)) {
        const Link &link = topo.links[l];
        crossings +=
            (link.from == cpu0 && link.to == cpu1) || (link.from == cpu1 && link.to == cpu0);
      }
      SCOPED_TRACE(hop_text(topo, paths, a, b));
      EXPECT_EQ(crossings, path.type == PathType::kSys ? 1 : 0);
      EXPECT_DOUBLE_EQ(path.bw, path.type == PathType::kSys ? cpu_link_bw("amd") : pci_bw(4, 16));
      EXPECT_EQ(path.hops, path.type == PathType::kPix ? 2 : path.type == PathType::kPhb ? 4 : 5);
    }
  }
}

// Switches below switches: GPUs under one switch are PIX; through two switches (a GPU on the
// parent switch) or three (sibling switches) PXB, as long as no CPU is on the way.
TEST(TopoPaths, NestedSwitchesArePxb) {
  Topology topo = parse(
      "<cohort_topology version='1' host='nested'>"
      "<cpu id='cpu0' numa='0' arch='x86_64' vendor='intel'/>"
      "<pci id='0000:10:00.0'/><pci id='0000:11:00.0'/><pci id='0000:14:00.0'/>"
      "<gpu id='0000:12:00.0' sm='80'/><gpu id='0000:13:00.0' sm='80'/>"
      "<gpu id='0000:15:00.0' sm='80'/><gpu id='0000:16:00.0' sm='80'/>"
      "<link a='cpu0' b='0000:10:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:10:00.0' b='0000:11:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:10:00.0' b='0000:14:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:10:00.0' b='0000:16:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:11:00.0' b='0000:12:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:11:00.0' b='0000:13:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:14:00.0' b='0000:15:00.0' type='pci' gen='4' width='8'/>"
      "</cohort_topology>");
  Paths paths(topo);
  const int a = node_index(topo, "0000:12:00.0");
  const int b = node_index(topo, "0000:13:00.0");
  const int c = node_index(topo, "0000:15:00.0");
  const int d = node_index(topo, "0000:16:00.0");
  EXPECT_EQ(paths.get(a, b).type, PathType::kPix);
  EXPECT_EQ(paths.get(d, a).type, PathType::kPxb);
  EXPECT_EQ(paths.get(d, a).hops, 3);
  EXPECT_EQ(paths.get(a, c).type, PathType::kPxb);
  EXPECT_EQ(paths.get(a, c).hops, 4);
  EXPECT_DOUBLE_EQ(paths.get(a, c).bw, pci_bw(4, 8));  // the x8 link
  EXPECT_EQ(
      route_ids(topo, paths, a, c),
      (std::vector<std::string>{"0000:11:00.0", "0000:10:00.0", "0000:14:00.0", "0000:15:00.0"}));
  EXPECT_EQ(paths.p2p_level(), PathType::kPxb);  // Intel
  EXPECT_EQ(paths.gpu_transport(a, c), Transport::kP2p);
  EXPECT_EQ(Paths(topo, at_level("PIX")).gpu_transport(a, c), Transport::kShm);
  EXPECT_EQ(Paths(topo, at_level("PIX")).gpu_transport(a, b), Transport::kP2p);
}

// Where a link is faster one way than the other, each direction's path has its own width.
TEST(TopoPaths, AsymmetricLinkGivesEachDirectionItsOwnWidth) {
  Topology topo = parse(
      "<cohort_topology version='1' host='asym'>"
      "<cpu id='cpu0' numa='0' arch='x86_64' vendor='amd'/><pci id='0000:10:00.0'/>"
      "<gpu id='0000:11:00.0' sm='80'/><gpu id='0000:12:00.0' sm='80'/>"
      "<link a='cpu0' b='0000:10:00.0' type='pci' gen='4' width='16'/>"
      "<link a='0000:11:00.0' b='0000:10:00.0' type='pci' bw='20' bw_back='8'/>"
      "<link a='0000:10:00.0' b='0000:12:00.0' type='pci' gen='4' width='16'/>"
      "</cohort_topology>");
  Paths paths(topo);
  const int a = node_index(topo, "0000:11:00.0");
  const int b = node_index(topo, "0000:12:00.0");
  EXPECT_EQ(paths.get(a, b).type, PathType::kPix);
  EXPECT_EQ(paths.get(b, a).type, PathType::kPix);
  EXPECT_DOUBLE_EQ(paths.get(a, b).bw, 20);
  EXPECT_DOUBLE_EQ(paths.get(b, a).bw, 8);
  EXPECT_DOUBLE_EQ(paths.get(a, node_index(topo, "cpu0")).bw, 20);
  EXPECT_DOUBLE_EQ(paths.get(node_index(topo, "cpu0"), a).bw, 8);
}

// The transport of every GPU pair at each P2P level (COHORT_P2P_LEVEL's names): P2P for the
// pairs whose path type is at most the level.
TEST(TopoPaths, TransportFollowsTheP2pLevel) {
  Topology pcie = load_reference("pcie-8gpu.xml");     // 8 PIX, 16 PHB, 32 SYS ordered pairs
  EXPECT_EQ(Paths(pcie).p2p_level(), PathType::kPhb);  // AMD: through the root complex is fine
  EXPECT_EQ(p2p_pairs(pcie, Paths(pcie)), 24);
  EXPECT_EQ(p2p_pairs(pcie, Paths(pcie, at_level("NVL"))), 0);
  EXPECT_EQ(p2p_pairs(pcie, Paths(pcie, at_level("pix"))), 8);
  EXPECT_EQ(p2p_pairs(pcie, Paths(pcie, at_level("PXB"))), 8);
  EXPECT_EQ(p2p_pairs(pcie, Paths(pcie, at_level("SYS"))), 56);
  Topology cube = load_reference("v100-8gpu-cubemesh.xml");  // 32 NVL, 24 NVB ordered pairs
  EXPECT_EQ(Paths(cube).p2p_level(), PathType::kPxb);        // Intel
  EXPECT_EQ(p2p_pairs(cube, Paths(cube)), 56);
  EXPECT_EQ(p2p_pairs(cube, Paths(cube, at_level("NVL"))), 32);
  EXPECT_EQ(p2p_pairs(cube, Paths(cube, at_level("NVB"))), 56);
  EXPECT_EQ(p2p_pairs(cube, Paths(cube, at_level("LOC"))), 0);
}

TEST(TopoPaths, DefaultP2pLevelByCpu) {
  EXPECT_EQ(default_p2p_level("intel", "x86_64"), PathType::kPxb);
  EXPECT_EQ(default_p2p_level("amd", "x86_64"), PathType::kPhb);
  EXPECT_EQ(default_p2p_level("nvidia", "aarch64"), PathType::kPxb);
  EXPECT_EQ(default_p2p_level("", "x86_64"), PathType::kPhb);
  EXPECT_EQ(Paths(load_reference("h100-8gpu-nvswitch.xml")).p2p_level(), PathType::kPxb);
  EXPECT_EQ(Paths(load_reference("vm-flat.xml")).p2p_level(), PathType::kPhb);  // no vendor
  EXPECT_EQ(Paths(Topology{}).p2p_level(), PathType::kPhb);                     // no CPU
}

// No link between the two sides: DIS, no route, SHM.
TEST(TopoPaths, UnreachablePairHasNoRoute) {
  Topology topo = parse(
      "<cohort_topology version='1' host='dis'>"
      "<cpu id='cpu0' numa='0'/><cpu id='cpu1' numa='1'/>"
      "<gpu id='0000:17:00.0' sm='80'/><gpu id='0000:ca:00.0' sm='80'/>"
      "<link a='0000:17:00.0' b='cpu0' type='pci' gen='4' width='16'/>"
      "<link a='0000:ca:00.0' b='cpu1' type='pci' gen='4' width='16'/>"
      "</cohort_topology>");
  Paths paths(topo);
  const int a = node_index(topo, "0000:17:00.0");
  const int b = node_index(topo, "0000:ca:00.0");
  EXPECT_EQ(paths.get(a, b).type, PathType::kDis);
  EXPECT_EQ(paths.get(a, b).bw, 0);
  EXPECT_TRUE(paths.route(a, b).empty());
  EXPECT_EQ(paths.gpu_transport(a, b), Transport::kShm);
  EXPECT_EQ(paths.gpu_transport(a, a), Transport::kP2p);
}

// Paths are searched from endpoints only, so the largest host a file may describe (4096 nodes,
// nearly all PCI switches) takes milliseconds where a table over all node pairs took 2.5 s.
TEST(TopoPaths, LargestHostAllowedTakesWellUnderASecond) {
  const Topology topo = parse(pcie_tree_xml(rules::kMaxNodes));
  ASSERT_EQ(topo.nodes.size(), static_cast<size_t>(rules::kMaxNodes));
  Paths paths;
  EXPECT_LT(seconds_of([&] { paths = Paths(topo); }), 1.0);
  int sources = 0;
  for (size_t n = 0; n < topo.nodes.size(); ++n) sources += paths.is_source(static_cast<int>(n));
  EXPECT_EQ(sources, 1 + 16 + 4 + 4);  // the CPU, GPUs, NICs and their ports
  const std::vector<int> gpus = all_gpus(topo);
  const std::vector<int> nics = topo.of_type(NodeType::kNic);
  for (int a : gpus) {  // each on a switch of its own below the first: never through the CPU
    for (int b : gpus) EXPECT_EQ(paths.get(a, b).type, a == b ? PathType::kLoc : PathType::kPxb);
  }
  EXPECT_EQ(paths.get(nics.back(), gpus.front()).type, PathType::kPxb);
  EXPECT_EQ(paths.get(gpus.front(), topo.find(NodeType::kCpu, "cpu0")).type, PathType::kPhb);
}

}  // namespace cohort::topo
