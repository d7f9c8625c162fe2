// Unit tests for the topology XML format (src/topo/xml.*): the reference machines in
// test/data/topo, dump/load round trips, the error each malformed file must name (with its
// line), and inputs that must never crash the loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.h"
#include "topo/bandwidth.h"
#include "topo/topo.h"
#include "topo/xml.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Node make_node(NodeType type, const std::string &id) {
  Node node;
  node.type = type;
  node.id = id;
  return node;
}

// The directed link a -> b; fails the test (and returns a zero link) when there is none.
Link link(const Topology &topo, const std::string &a, const std::string &b) {
  const int from = node_index(topo, a);
  const int to = node_index(topo, b);
  const int l = from >= 0 && to >= 0 ? topo.link_between(from, to) : -1;
  EXPECT_GE(l, 0) << "no link " << a << " -> " << b;
  return l >= 0 ? topo.links[l] : Link{};
}

// Ids of the nodes one link away from `id` that have type `type`.
std::set<std::string> neighbours(const Topology &topo, const std::string &id, NodeType type) {
  std::set<std::string> out;
  for (int l : topo.nodes[node_index(topo, id)].links) {
    const Node &other = topo.nodes[topo.links[l].to];
    if (other.type == type) out.insert(other.id);
  }
  return out;
}

// Every PCI switch has `gpus` GPUs and `nics` NICs below it and one CPU above.
void expect_every_switch_holds(const Topology &topo, size_t gpus, size_t nics) {
  for (int s : topo.of_type(NodeType::kPci)) {
    const std::string &id = topo.nodes[s].id;
    EXPECT_EQ(neighbours(topo, id, NodeType::kGpu).size(), gpus) << id;
    EXPECT_EQ(neighbours(topo, id, NodeType::kNic).size(), nics) << id;
    EXPECT_EQ(neighbours(topo, id, NodeType::kCpu).size(), 1u) << id;
  }
}

struct Counts {
  size_t gpu, nvswitch, pci, cpu, nic, net;
  size_t links;  // undirected, as written in the file
};

void expect_counts(const Topology &topo, const Counts &want) {
  EXPECT_EQ(topo.of_type(NodeType::kGpu).size(), want.gpu);
  EXPECT_EQ(topo.of_type(NodeType::kNvSwitch).size(), want.nvswitch);
  EXPECT_EQ(topo.of_type(NodeType::kPci).size(), want.pci);
  EXPECT_EQ(topo.of_type(NodeType::kCpu).size(), want.cpu);
  EXPECT_EQ(topo.of_type(NodeType::kNic).size(), want.nic);
  EXPECT_EQ(topo.of_type(NodeType::kNet).size(), want.net);
  EXPECT_EQ(topo.nodes.size(),
            want.gpu + want.nvswitch + want.pci + want.cpu + want.nic + want.net);
  EXPECT_EQ(topo.links.size(), 2 * want.links);
}

// A dump keeps six significant digits; every figure in these tests fits in them.
void expect_same_bw(double x, double y) { EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::fabs(x))); }

// Everything a dump carries (cuda_device is per process and is not dumped).
void expect_same_model(const Topology &x, const Topology &y) {
  EXPECT_EQ(x.host, y.host);
  ASSERT_EQ(x.nodes.size(), y.nodes.size());
  for (size_t i = 0; i < x.nodes.size(); ++i) {
    const Node &a = x.nodes[i];
    const Node &b = y.nodes[i];
    SCOPED_TRACE("node " + a.id);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.sm, b.sm);
    EXPECT_EQ(a.uuid, b.uuid);
    EXPECT_EQ(a.numa, b.numa);
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.vendor, b.vendor);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.speed_gbps, b.speed_gbps);
    EXPECT_EQ(a.links, b.links);
  }
  ASSERT_EQ(x.links.size(), y.links.size());
  for (size_t l = 0; l < x.links.size(); ++l) {
    const Link &a = x.links[l];
    const Link &b = y.links[l];
    SCOPED_TRACE(x.nodes[a.from].id + " -> " + x.nodes[a.to].id);
    EXPECT_EQ(a.from, b.from);
    EXPECT_EQ(a.to, b.to);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.pci_gen, b.pci_gen);
    EXPECT_EQ(a.pci_width, b.pci_width);
    expect_same_bw(a.bw, b.bw);
  }
  EXPECT_EQ(x.assumptions, y.assumptions);
  EXPECT_EQ(x.no_p2p, y.no_p2p);
}

size_t occurrences(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ------------------------------------------------------------------ reference machines

TEST(TopoXmlReference, V100AllPairs) {
  Topology topo = load_reference("v100-4gpu-allpairs.xml");
  expect_counts(topo,
                {.gpu = 4, .nvswitch = 0, .pci = 2, .cpu = 1, .nic = 1, .net = 1, .links = 14});
  EXPECT_EQ(topo.host, "v100-4gpu-allpairs");
  const Node &cpu = topo.nodes[node_index(topo, "cpu0")];
  EXPECT_EQ(cpu.numa, 0);
  EXPECT_EQ(cpu.arch, "x86_64");
  EXPECT_EQ(cpu.vendor, "intel");
  const std::vector<int> gpus = topo.of_type(NodeType::kGpu);
  for (int g : gpus) {
    EXPECT_EQ(topo.nodes[g].sm, 70);
    EXPECT_TRUE(topo.nodes[g].uuid.empty());
    EXPECT_EQ(topo.nodes[g].cuda_device, -1);
    for (int h : gpus) {
      if (g == h) continue;
      Link nvlink = link(topo, topo.nodes[g].id, topo.nodes[h].id);
      EXPECT_EQ(nvlink.type, LinkType::kNvLink);
      EXPECT_EQ(nvlink.count, 2);
      EXPECT_DOUBLE_EQ(nvlink.bw, 2 * nvlink_bw(70));
    }
  }
  Link up = link(topo, "0000:04:00.0", "0000:06:00.0");
  EXPECT_EQ(up.type, LinkType::kPci);
  EXPECT_EQ(up.pci_gen, 3);
  EXPECT_EQ(up.pci_width, 16);
  EXPECT_DOUBLE_EQ(up.bw, pci_bw(3, 16));
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "0000:08:00.0").bw, pci_bw(3, 16));
  EXPECT_EQ(neighbours(topo, "0000:04:00.0", NodeType::kNic),
            std::set<std::string>{"0000:05:00.0"});
  const Node &nic = topo.nodes[node_index(topo, "0000:05:00.0")];
  EXPECT_EQ(nic.name, "mlx5_0");
  EXPECT_EQ(nic.speed_gbps, 100);
  Link net = link(topo, "0000:05:00.0", "net0");
  EXPECT_EQ(net.type, LinkType::kNet);
  EXPECT_DOUBLE_EQ(net.bw, nic_bw(100));
}

TEST(TopoXmlReference, H100NvSwitch) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  expect_counts(topo,
                {.gpu = 8, .nvswitch = 1, .pci = 4, .cpu = 2, .nic = 8, .net = 8, .links = 37});
  std::set<std::string> uuids;
  for (int g : topo.of_type(NodeType::kGpu)) {
    const Node &gpu = topo.nodes[g];
    SCOPED_TRACE(gpu.id);
    EXPECT_EQ(gpu.sm, 90);
    EXPECT_EQ(gpu.uuid.size(), 32u);
    EXPECT_EQ(gpu.uuid.find_first_not_of("0123456789abcdef"), std::string::npos);
    uuids.insert(gpu.uuid);
    for (auto [from, to] : {std::pair(gpu.id, std::string("nvswitch")), {"nvswitch", gpu.id}}) {
      Link nvlink = link(topo, from, to);
      EXPECT_EQ(nvlink.type, LinkType::kNvLink);
      EXPECT_EQ(nvlink.count, 18);
      EXPECT_DOUBLE_EQ(nvlink.bw, 18 * nvlink_bw(90));
    }
  }
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "cpu1").bw, cpu_link_bw("intel"));
  EXPECT_EQ(link(topo, "cpu1", "cpu0").type, LinkType::kCpu);
  std::set<std::string> names;
  for (int n : topo.of_type(NodeType::kNic)) {
    const Node &nic = topo.nodes[n];
    names.insert(nic.name);
    EXPECT_EQ(nic.speed_gbps, 400);
  }
  EXPECT_EQ(names, (std::set<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4",
                                          "mlx5_5", "mlx5_6", "mlx5_7"}));
  expect_every_switch_holds(topo, 2, 2);
  // GPU 0 and its NIC share the first switch of socket 0; GPU 7 and its NIC the last of socket 1.
  EXPECT_EQ(neighbours(topo, "0000:1b:00.0", NodeType::kPci),
            std::set<std::string>{"0000:16:00.0"});
  EXPECT_EQ(neighbours(topo, "0000:18:00.0", NodeType::kPci),
            std::set<std::string>{"0000:16:00.0"});
  EXPECT_EQ(neighbours(topo, "0000:cb:00.0", NodeType::kCpu), std::set<std::string>{"cpu1"});
  EXPECT_DOUBLE_EQ(link(topo, "0000:16:00.0", "cpu0").bw, pci_bw(5, 16));
  EXPECT_DOUBLE_EQ(link(topo, "0000:df:00.0", "0000:cb:00.0").bw, pci_bw(5, 16));
  EXPECT_DOUBLE_EQ(link(topo, "net7", "0000:dc:00.0").bw, nic_bw(400));
  EXPECT_EQ(topo.nodes[node_index(topo, "net7")].name, "mlx5_7");
}

TEST(TopoXmlReference, V100CubeMesh) {
  Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  expect_counts(topo,
                {.gpu = 8, .nvswitch = 0, .pci = 4, .cpu = 2, .nic = 4, .net = 4, .links = 37});
  const std::vector<int> gpus = topo.of_type(NodeType::kGpu);
  // Six NVLinks per GPU, over four peers: three in its quad, its peer in the other quad.
  std::map<int, int> links_by_count;
  for (int g : gpus) {
    const Node &gpu = topo.nodes[g];
    SCOPED_TRACE(gpu.id);
    EXPECT_EQ(gpu.sm, 70);
    int nvlinks = 0, peers = 0;
    for (int l : gpu.links) {
      const Link &out = topo.links[l];
      if (out.type != LinkType::kNvLink) continue;
      EXPECT_EQ(topo.nodes[out.to].type, NodeType::kGpu);
      EXPECT_DOUBLE_EQ(out.bw, out.count * nvlink_bw(70));
      nvlinks += out.count;
      ++peers;
      links_by_count[out.count]++;
    }
    EXPECT_EQ(nvlinks, 6);
    EXPECT_EQ(peers, 4);
  }
  EXPECT_EQ(links_by_count[1], 16);  // directed: 8 single and 8 doubled pairs
  EXPECT_EQ(links_by_count[2], 16);
  // GPU k of a quad: linked to the three others of its quad and to GPU k of the other quad.
  const std::vector<std::string> quads[] = {
      {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0"},
      {"0000:85:00.0", "0000:86:00.0", "0000:89:00.0", "0000:8a:00.0"}};
  for (int q = 0; q < 2; ++q) {
    for (size_t k = 0; k < 4; ++k) {
      std::set<std::string> want(quads[q].begin(), quads[q].end());
      want.erase(quads[q][k]);
      want.insert(quads[1 - q][k]);
      EXPECT_EQ(neighbours(topo, quads[q][k], NodeType::kGpu), want);
    }
  }
  EXPECT_EQ(link(topo, "0000:06:00.0", "0000:85:00.0").count, 2);
  EXPECT_EQ(link(topo, "0000:0a:00.0", "0000:89:00.0").count, 1);
  EXPECT_EQ(topo.link_between(node_index(topo, "0000:06:00.0"), node_index(topo, "0000:86:00.0")),
            -1);
  // Each switch: two GPUs, one 100 Gb/s NIC, one CPU above it, Gen3 x16 throughout.
  expect_every_switch_holds(topo, 2, 1);
  EXPECT_EQ(neighbours(topo, "0000:03:00.0", NodeType::kGpu),
            (std::set<std::string>{"0000:06:00.0", "0000:07:00.0"}));
  EXPECT_EQ(neighbours(topo, "0000:88:00.0", NodeType::kCpu), std::set<std::string>{"cpu1"});
  EXPECT_DOUBLE_EQ(link(topo, "0000:86:00.0", "0000:83:00.0").bw, pci_bw(3, 16));
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "cpu1").bw, cpu_link_bw("intel"));
  for (int n : topo.of_type(NodeType::kNic)) EXPECT_EQ(topo.nodes[n].speed_gbps, 100);
  EXPECT_DOUBLE_EQ(link(topo, "0000:8c:00.0", "net3").bw, nic_bw(100));
  EXPECT_EQ(topo.nodes[node_index(topo, "0000:8c:00.0")].name, "mlx5_3");
}

TEST(TopoXmlReference, Pcie8Gpu) {
  Topology topo = load_reference("pcie-8gpu.xml");
  expect_counts(topo,
                {.gpu = 8, .nvswitch = 0, .pci = 4, .cpu = 2, .nic = 2, .net = 2, .links = 17});
  for (const Link &l : topo.links) EXPECT_NE(l.type, LinkType::kNvLink);
  for (int g : topo.of_type(NodeType::kGpu)) {
    EXPECT_EQ(topo.nodes[g].sm, 89);
    const std::set<std::string> up = neighbours(topo, topo.nodes[g].id, NodeType::kPci);
    ASSERT_EQ(up.size(), 1u) << topo.nodes[g].id;
    EXPECT_DOUBLE_EQ(link(topo, topo.nodes[g].id, *up.begin()).bw, pci_bw(4, 16));
  }
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "cpu1").bw, cpu_link_bw("amd"));
  EXPECT_EQ(topo.nodes[node_index(topo, "cpu1")].vendor, "amd");
  EXPECT_EQ(topo.nodes[node_index(topo, "cpu1")].numa, 1);
  // Each NIC hangs off its CPU's root port, not a switch.
  EXPECT_EQ(neighbours(topo, "0000:41:00.0", NodeType::kCpu), std::set<std::string>{"cpu0"});
  EXPECT_EQ(neighbours(topo, "0000:c1:00.0", NodeType::kCpu), std::set<std::string>{"cpu1"});
  EXPECT_TRUE(neighbours(topo, "0000:c1:00.0", NodeType::kPci).empty());
  EXPECT_DOUBLE_EQ(link(topo, "cpu1", "0000:c1:00.0").bw, pci_bw(4, 16));
  EXPECT_DOUBLE_EQ(link(topo, "0000:41:00.0", "net0").bw, nic_bw(200));
  EXPECT_DOUBLE_EQ(link(topo, "net1", "0000:c1:00.0").bw, nic_bw(200));
}

TEST(TopoXmlReference, Pcie2GpuSys) {
  Topology topo = load_reference("pcie-2gpu-sys.xml");
  expect_counts(topo,
                {.gpu = 2, .nvswitch = 0, .pci = 0, .cpu = 2, .nic = 0, .net = 0, .links = 3});
  EXPECT_DOUBLE_EQ(link(topo, "0000:17:00.0", "cpu0").bw, pci_bw(4, 16));
  EXPECT_DOUBLE_EQ(link(topo, "cpu1", "0000:ca:00.0").bw, pci_bw(4, 16));
  EXPECT_EQ(link(topo, "cpu1", "0000:ca:00.0").pci_gen, 4);
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "cpu1").bw, cpu_link_bw("intel"));
  EXPECT_EQ(topo.nodes[node_index(topo, "0000:ca:00.0")].sm, 80);
  EXPECT_EQ(topo.link_between(node_index(topo, "0000:17:00.0"), node_index(topo, "0000:ca:00.0")),
            -1);
}

TEST(TopoXmlReference, VmFlat) {
  Topology topo = load_reference("vm-flat.xml");
  expect_counts(topo,
                {.gpu = 4, .nvswitch = 0, .pci = 0, .cpu = 1, .nic = 1, .net = 1, .links = 6});
  const Node &cpu = topo.nodes[node_index(topo, "cpu0")];
  EXPECT_EQ(cpu.numa, -1);
  EXPECT_EQ(cpu.vendor, "");
  EXPECT_EQ(topo.assumptions,
            (std::vector<std::string>{"NUMA unknown: one CPU assumed",
                                      "flat PCI tree: GPUs attached to the host bridge"}));
  for (int g : topo.of_type(NodeType::kGpu)) {
    EXPECT_DOUBLE_EQ(link(topo, topo.nodes[g].id, "cpu0").bw, pci_bw(4, 16));
  }
  // No gen or width on the NIC's link: the table's default (Gen3 x16).
  Link nic_up = link(topo, "0000:00:03.0", "cpu0");
  EXPECT_EQ(nic_up.pci_gen, 0);
  EXPECT_EQ(nic_up.pci_width, 0);
  EXPECT_DOUBLE_EQ(nic_up.bw, pci_bw(0, 0));
  EXPECT_DOUBLE_EQ(nic_up.bw, pci_bw(3, 16));
  EXPECT_DOUBLE_EQ(link(topo, "net0", "0000:00:03.0").bw, nic_bw(25));
  EXPECT_EQ(topo.nodes[node_index(topo, "0000:00:03.0")].name, "eth0");
}

// ------------------------------------------------------------------------ round trips

TEST(TopoXmlRoundTrip, ReferenceFilesDumpLoadDumpIsIdentical) {
  for (const char *name : kReferenceMachines) {
    SCOPED_TRACE(name);
    Topology first = load_reference(name);
    const std::string dump = to_xml(first);
    Topology second;
    ASSERT_EQ(from_xml(dump, "dump.xml", &second), COHORT_SUCCESS) << last_error() << "\n" << dump;
    EXPECT_EQ(to_xml(second), dump);
    expect_same_model(first, second);
    // The dump writes every bandwidth the file left to the table, and no comment.
    EXPECT_EQ(occurrences(dump, "<link "), first.links.size() / 2);
    EXPECT_EQ(occurrences(dump, " bw=\""), first.links.size() / 2);
    EXPECT_EQ(occurrences(dump, "<!--"), 0u);
  }
}

// A small machine built in code, with every attribute the format carries.
Topology sample_topology() {
  Topology topo;
  topo.host = "node<1> & \"friends\" 'x'";
  Node nic = make_node(NodeType::kNic, "0000:c1:00.0");
  nic.name = "mlx5_0";
  nic.speed_gbps = 200;
  Node net = make_node(NodeType::kNet, "net0");
  net.name = "mlx5_0";
  net.speed_gbps = 200;
  Node gpu_b1 = make_node(NodeType::kGpu, "0000:b1:00.0");
  gpu_b1.sm = 90;
  gpu_b1.uuid = "0123456789abcdef0123456789abcdef";
  gpu_b1.cuda_device = 1;
  Node gpu_17 = make_node(NodeType::kGpu, "0000:17:00.0");
  gpu_17.sm = 80;
  gpu_17.cuda_device = 0;
  Node cpu1 = make_node(NodeType::kCpu, "cpu1");
  cpu1.numa = 1;
  cpu1.arch = "x86_64";
  cpu1.vendor = "amd";
  Node cpu0 = make_node(NodeType::kCpu, "cpu0");
  cpu0.numa = 0;
  cpu0.arch = "x86_64";
  cpu0.vendor = "amd";
  const int n_nic = topo.add_node(nic);
  const int n_net = topo.add_node(net);
  const int n_b1 = topo.add_node(gpu_b1);
  const int n_17 = topo.add_node(gpu_17);
  const int n_cpu1 = topo.add_node(cpu1);
  const int n_cpu0 = topo.add_node(cpu0);
  const int n_pci = topo.add_node(make_node(NodeType::kPci, "0000:15:00.0"));
  const int n_nvs = topo.add_node(make_node(NodeType::kNvSwitch, "nvswitch"));
  topo.connect(n_b1, n_cpu1, LinkType::kPci, 25.2032, -1, 1, 4, 16);
  topo.connect(n_pci, n_17, LinkType::kPci, 12.5, 10.25);  // asymmetric, gen unknown
  topo.connect(n_cpu0, n_pci, LinkType::kPci, 50.4064, -1, 1, 5, 16);
  topo.connect(n_cpu1, n_cpu0, LinkType::kCpu, 16);
  topo.connect(n_17, n_b1, LinkType::kNvLink, 40, -1, 2);
  topo.connect(n_b1, n_nvs, LinkType::kNvLink, 370.8, -1, 18);
  topo.connect(n_nic, n_cpu1, LinkType::kPci, 25.2032, -1, 1, 4, 16);
  topo.connect(n_net, n_nic, LinkType::kNet, 25);
  topo.no_p2p.emplace_back("0000:b1:00.0", "0000:17:00.0");
  topo.assumptions.push_back("a <quoted> \"text\" & more");
  topo.assumptions.push_back("second");
  return topo;
}

TEST(TopoXmlRoundTrip, ProgrammaticTopology) {
  const Topology built = sample_topology();
  ASSERT_EQ(validate(built), COHORT_SUCCESS) << last_error();
  const std::string dump = to_xml(built);
  Topology loaded;
  ASSERT_EQ(from_xml(dump, "sample.xml", &loaded), COHORT_SUCCESS) << last_error() << "\n" << dump;
  EXPECT_EQ(to_xml(loaded), dump);
  Topology canonical = built;
  canonicalize(&canonical);
  expect_same_model(canonical, loaded);
  // Exact values: every figure here has at most six significant digits.
  EXPECT_EQ(link(loaded, "0000:15:00.0", "0000:17:00.0").bw, 12.5);
  EXPECT_EQ(link(loaded, "0000:17:00.0", "0000:15:00.0").bw, 10.25);
  EXPECT_EQ(link(loaded, "0000:b1:00.0", "nvswitch").bw, 370.8);
  EXPECT_EQ(loaded.host, built.host);
  for (const Node &node : loaded.nodes) EXPECT_EQ(node.cuda_device, -1) << node.id;
  EXPECT_EQ(dump.find("cuda_device"), std::string::npos);
  EXPECT_EQ(occurrences(dump, "bw_back="), 1u);
  EXPECT_EQ(occurrences(dump, "<link "), 8u);
}

// The same machine with its nodes added in another order and each link from either end.
Topology rebuilt_in_order(const Topology &topo, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<int> order(topo.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::shuffle(order.begin(), order.end(), random);
  Topology out;
  out.host = topo.host;
  std::vector<int> new_index(order.size());
  for (int old : order) new_index[old] = out.add_node(topo.nodes[old]);
  std::vector<Link> pairs;
  for (const Link &l : topo.links) {
    if (l.from < l.to) pairs.push_back(l);
  }
  std::shuffle(pairs.begin(), pairs.end(), random);
  for (const Link &l : pairs) {
    const double back = topo.links[topo.link_between(l.to, l.from)].bw;
    int a = new_index[l.from], b = new_index[l.to];
    double bw = l.bw, bw_back = back;
    if (random() % 2 != 0) std::swap(a, b), std::swap(bw, bw_back);
    out.connect(a, b, l.type, bw, bw_back, l.count, l.pci_gen, l.pci_width);
  }
  for (auto [x, y] : topo.no_p2p) out.no_p2p.emplace_back(y, x);
  out.assumptions = topo.assumptions;
  return out;
}

TEST(TopoXmlRoundTrip, DumpIsCanonicalWhateverTheBuildOrder) {
  const Topology built = sample_topology();
  const std::string dump = to_xml(built);
  for (unsigned seed = 1; seed <= 20; ++seed) {
    EXPECT_EQ(to_xml(rebuilt_in_order(built, seed)), dump) << "seed " << seed;
  }
  // to_xml canonicalizes a copy, not the caller's model.
  EXPECT_EQ(built.nodes[0].type, NodeType::kNic);
}

TEST(TopoXmlRoundTrip, DumpFormatIsExact) {
  Topology topo;
  topo.host = "box";
  Node gpu_a = make_node(NodeType::kGpu, "0000:17:00.0");  // sm and uuid unknown: not written
  Node gpu_b = make_node(NodeType::kGpu, "0000:18:00.0");
  gpu_b.sm = 90;
  gpu_b.uuid = "00112233445566778899aabbccddeeff";
  Node cpu = make_node(NodeType::kCpu, "cpu0");  // numa -1 is written, empty strings are not
  Node nic = make_node(NodeType::kNic, "0000:19:00.0");  // no name, speed 0: not written
  Node net = make_node(NodeType::kNet, "net0");
  net.name = "ib0";
  net.speed_gbps = 400;
  const int a = topo.add_node(gpu_a), b = topo.add_node(gpu_b), c = topo.add_node(cpu);
  const int n = topo.add_node(nic), t = topo.add_node(net);
  topo.connect(c, a, LinkType::kPci, 25.2032, -1, 1, 4, 16);
  topo.connect(b, c, LinkType::kPci, 20, 1e6, 1, 0, 8);
  topo.connect(b, a, LinkType::kNvLink, 80.5, -1, 4);
  topo.connect(n, c, LinkType::kPci, 1.0 / 3);
  topo.connect(t, n, LinkType::kNet, 50);
  topo.no_p2p.emplace_back("0000:18:00.0", "0000:17:00.0");
  topo.assumptions.push_back("x & y");
  const std::string expected =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<cohort_topology version=\"1\" host=\"box\">\n"
      "  <gpu id=\"0000:17:00.0\"/>\n"
      "  <gpu id=\"0000:18:00.0\" sm=\"90\" uuid=\"00112233445566778899aabbccddeeff\"/>\n"
      "  <cpu id=\"cpu0\" numa=\"-1\"/>\n"
      "  <nic id=\"0000:19:00.0\"/>\n"
      "  <net id=\"net0\" name=\"ib0\" speed=\"400\"/>\n"
      "  <link a=\"0000:17:00.0\" b=\"0000:18:00.0\" type=\"nvlink\" count=\"4\" bw=\"80.5\"/>\n"
      "  <link a=\"0000:17:00.0\" b=\"cpu0\" type=\"pci\" gen=\"4\" width=\"16\" bw=\"25.2032\"/>\n"
      "  <link a=\"0000:18:00.0\" b=\"cpu0\" type=\"pci\" width=\"8\" bw=\"20\" "
      "bw_back=\"1e+06\"/>\n"
      "  <link a=\"cpu0\" b=\"0000:19:00.0\" type=\"pci\" bw=\"0.333333\"/>\n"
      "  <link a=\"0000:19:00.0\" b=\"net0\" type=\"net\" bw=\"50\"/>\n"
      "  <no_p2p a=\"0000:17:00.0\" b=\"0000:18:00.0\"/>\n"
      "  <assumed text=\"x &amp; y\"/>\n"
      "</cohort_topology>\n";
  EXPECT_EQ(to_xml(topo), expected);
}

TEST(TopoXmlRoundTrip, EmptyTopology) {
  Topology empty;
  const std::string dump = to_xml(empty);
  EXPECT_EQ(dump, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<cohort_topology version=\"1\"/>\n");
  Topology loaded;
  loaded.host = "untouched";
  EXPECT_EQ(from_xml(dump, "empty.xml", &loaded), COHORT_SUCCESS) << last_error();
  EXPECT_TRUE(loaded.nodes.empty());
  EXPECT_EQ(loaded.host, "");
}

// Strings from the OS that XML cannot carry become '?', so the dump still loads.
TEST(TopoXmlRoundTrip, UnrepresentableCharactersAreReplaced) {
  Topology topo = sample_topology();
  topo.host = std::string("bad\xff\x01name\ttab\nline\xc3\xa9");
  topo.assumptions.push_back(std::string("nul\0byte", 8));
  const std::string dump = to_xml(topo);
  Topology loaded;
  ASSERT_EQ(from_xml(dump, "odd.xml", &loaded), COHORT_SUCCESS) << last_error() << "\n" << dump;
  EXPECT_EQ(loaded.host, "bad??name\ttab\nline\xc3\xa9");
  EXPECT_EQ(loaded.assumptions.back(), "nul?byte");
  EXPECT_EQ(to_xml(loaded), dump);
}

// ---------------------------------------------------------------------------- loading

TEST(TopoXmlLoad, NormalizesBusIds) {
  const std::string text =
      "<cohort_topology version=\"1\">\n"
      "  <cpu id=\"cpu0\"/>\n"
      "  <pci id=\"15:00.0\"/>\n"
      "  <gpu id=\"0000:B1:00.0\"/>\n"
      "  <gpu id=\"0000:b2:00.0\"/>\n"
      "  <nic id=\"0000:C1:00.1\"/>\n"
      "  <link a=\"CPU0\" b=\"0000:15:00.0\" type=\"PCI\"/>\n"
      "  <link a=\"0000:15:00.0\" b=\"B1:00.0\" type=\"pci\"/>\n"
      "  <link a=\"0000:15:00.0\" b=\"0000:B2:00.0\" type=\"pci\"/>\n"
      "  <link a=\"0000:c1:00.1\" b=\"cpu0\" type=\"pci\"/>\n"
      "  <no_p2p a=\"B2:00.0\" b=\"0000:B1:00.0\"/>\n"
      "</cohort_topology>\n";
  Topology topo;
  // Node ids other than bus ids are case-sensitive: "CPU0" is not "cpu0".
  ASSERT_EQ(from_xml(text, "case.xml", &topo), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("line 7: link a='CPU0': no node with this id"), std::string::npos)
      << last_error();
  std::string fixed = text;
  fixed.replace(fixed.find("CPU0"), 4, "cpu0");
  ASSERT_EQ(from_xml(fixed, "case.xml", &topo), COHORT_SUCCESS) << last_error();
  EXPECT_GE(topo.find(NodeType::kPci, "0000:15:00.0"), 0);
  EXPECT_GE(topo.find(NodeType::kGpu, "0000:b1:00.0"), 0);
  EXPECT_GE(topo.find(NodeType::kGpu, "0000:b2:00.0"), 0);
  EXPECT_GE(topo.find(NodeType::kNic, "0000:c1:00.1"), 0);
  EXPECT_EQ(link(topo, "0000:15:00.0", "0000:b1:00.0").type, LinkType::kPci);
  ASSERT_EQ(topo.no_p2p.size(), 1u);
  EXPECT_EQ(topo.no_p2p[0],
            std::make_pair(std::string("0000:b1:00.0"), std::string("0000:b2:00.0")));
  const std::string dump = to_xml(topo);
  EXPECT_EQ(dump.find_first_of("BC"), std::string::npos) << dump;
}

TEST(TopoXmlLoad, ComputesMissingBandwidthFromTheTable) {
  const std::string text =
      "<cohort_topology version=\"1\">\n"
      "  <cpu id=\"cpu0\" vendor=\"amd\"/> <cpu id=\"cpu1\" vendor=\"intel\"/>\n"
      "  <cpu id=\"cpu2\" vendor=\"zx\"/>\n"
      "  <gpu id=\"0000:01:00.0\" sm=\"70\"/> <gpu id=\"0000:02:00.0\" sm=\"90\"/>\n"
      "  <gpu id=\"0000:03:00.0\"/> <gpu id=\"0000:04:00.0\"/> <gpu id=\"0000:05:00.0\" "
      "sm=\"80\"/>\n"
      "  <nvswitch id=\"nvswitch\"/>\n"
      "  <nic id=\"0000:06:00.0\" speed=\"200\"/> <net id=\"net0\" speed=\"800\"/>\n"
      "  <nic id=\"0000:07:00.0\"/> <net id=\"net1\"/>\n"
      "  <link a=\"cpu1\" b=\"cpu0\" type=\"cpu\"/>\n"  // first CPU end: intel
      "  <link a=\"cpu0\" b=\"cpu2\" type=\"cpu\"/>\n"  // amd
      "  <link a=\"0000:01:00.0\" b=\"cpu0\" type=\"pci\" gen=\"5\" width=\"8\"/>\n"
      "  <link a=\"0000:02:00.0\" b=\"cpu0\" type=\"pci\" gen=\"2\"/>\n"
      "  <link a=\"0000:03:00.0\" b=\"cpu1\" type=\"pci\" width=\"4\"/>\n"
      "  <link a=\"0000:04:00.0\" b=\"cpu1\" type=\"pci\" bw=\"7.5\"/>\n"
      "  <link a=\"0000:05:00.0\" b=\"cpu1\" type=\"pci\" bw=\"9\" bw_back=\"3\"/>\n"
      "  <link a=\"0000:01:00.0\" b=\"0000:02:00.0\" type=\"nvlink\" count=\"3\"/>\n"  // lower sm
      "  <link a=\"0000:03:00.0\" b=\"0000:04:00.0\" type=\"nvlink\"/>\n"              // sm unknown
      "  <link a=\"0000:05:00.0\" b=\"0000:03:00.0\" type=\"nvlink\" count=\"2\"/>\n"  // known sm
      "  <link a=\"nvswitch\" b=\"0000:02:00.0\" type=\"nvlink\" count=\"18\"/>\n"
      "  <link a=\"net0\" b=\"0000:06:00.0\" type=\"net\"/>\n"  // the NIC's speed, not net's
      "  <link a=\"0000:07:00.0\" b=\"net1\" type=\"net\"/>\n"  // speed unknown
      "  <link a=\"0000:06:00.0\" b=\"cpu0\" type=\"pci\"/> <link a=\"0000:07:00.0\" b=\"cpu0\" "
      "type=\"pci\"/>\n"
      "</cohort_topology>\n";
  Topology topo;
  ASSERT_EQ(from_xml(text, "table.xml", &topo), COHORT_SUCCESS) << last_error();
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "cpu1").bw, cpu_link_bw("intel"));
  EXPECT_DOUBLE_EQ(link(topo, "cpu2", "cpu0").bw, cpu_link_bw("amd"));
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "0000:01:00.0").bw, pci_bw(5, 8));
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "0000:02:00.0").bw, pci_bw(2, 0));
  EXPECT_DOUBLE_EQ(link(topo, "cpu1", "0000:03:00.0").bw, pci_bw(0, 4));
  EXPECT_EQ(link(topo, "cpu1", "0000:03:00.0").pci_width, 4);
  EXPECT_EQ(link(topo, "cpu1", "0000:04:00.0").bw, 7.5);
  EXPECT_EQ(link(topo, "0000:04:00.0", "cpu1").bw, 7.5);
  EXPECT_EQ(link(topo, "0000:05:00.0", "cpu1").bw, 9);
  EXPECT_EQ(link(topo, "cpu1", "0000:05:00.0").bw, 3);
  EXPECT_DOUBLE_EQ(link(topo, "0000:02:00.0", "0000:01:00.0").bw, 3 * nvlink_bw(70));
  EXPECT_DOUBLE_EQ(link(topo, "0000:03:00.0", "0000:04:00.0").bw, nvlink_bw(0));
  EXPECT_DOUBLE_EQ(link(topo, "0000:03:00.0", "0000:05:00.0").bw, 2 * nvlink_bw(80));
  EXPECT_DOUBLE_EQ(link(topo, "0000:02:00.0", "nvswitch").bw, 18 * nvlink_bw(90));
  EXPECT_DOUBLE_EQ(link(topo, "0000:06:00.0", "net0").bw, nic_bw(200));
  EXPECT_DOUBLE_EQ(link(topo, "net1", "0000:07:00.0").bw, nic_bw(0));
  EXPECT_EQ(link(topo, "0000:01:00.0", "0000:02:00.0").count, 3);
  EXPECT_EQ(link(topo, "0000:03:00.0", "0000:04:00.0").count, 1);
}

TEST(TopoXmlLoad, ElementOrderCommentsAndDefaults) {
  const std::string text =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<!-- before the root -->\n"
      "<cohort_topology host=\"h\" version=\"1\">\n"
      "  <link b=\"cpu0\" a=\"0000:17:00.0\" type=\"pci\"/>  <!-- before its nodes -->\n"
      "  <assumed text=\"first\"/>\n"
      "  <?some-instruction ignored?>\n"
      "  <gpu id=\"0000:17:00.0\"></gpu>\n"
      "  <![CDATA[   ]]>\n"
      "  <cpu id=\"cpu0\"/>\n"
      "  <assumed text=\"\"/>\n"
      "</cohort_topology>\n"
      "<!-- after -->\n";
  Topology topo;
  ASSERT_EQ(from_xml(text, "order.xml", &topo), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(topo.host, "h");
  const Node &cpu = topo.nodes[node_index(topo, "cpu0")];
  EXPECT_EQ(cpu.numa, -1);
  EXPECT_EQ(topo.nodes[node_index(topo, "0000:17:00.0")].sm, 0);
  EXPECT_DOUBLE_EQ(link(topo, "cpu0", "0000:17:00.0").bw, pci_bw(0, 0));
  EXPECT_EQ(topo.assumptions, (std::vector<std::string>{"first", ""}));
}

TEST(TopoXmlLoad, ValidateProblemsNameTheFile) {
  const std::string text =
      "<cohort_topology version=\"1\">\n"
      "  <cpu id=\"cpu0\"/> <gpu id=\"0000:17:00.0\"/> <nvswitch id=\"nvswitch\"/>\n"
      "  <link a=\"0000:17:00.0\" b=\"nvswitch\" type=\"nvlink\" count=\"18\"/>\n"
      "</cohort_topology>\n";
  Topology topo;
  topo.host = "untouched";
  ASSERT_EQ(from_xml(text, "floating.xml", &topo), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(),
            "topology file floating.xml line 2: gpu 0000:17:00.0: no PCI path to any CPU (rule: "
            "every GPU reaches a CPU)");
  EXPECT_EQ(topo.host, "untouched");  // set only on success
  EXPECT_TRUE(topo.nodes.empty());
}

// ----------------------------------------------------------------------------- errors

struct BadFile {
  const char *name;
  std::string text;
  int line;
  std::vector<std::string> words;  // each must appear in the message
};

void PrintTo(const BadFile &bad, std::ostream *out) { *out << bad.name; }

// A valid file with `extra` on line 6.
std::string with_line_6(const std::string &extra) {
  const std::string lines_1_to_5 =
      "<?xml version=\"1.0\"?>\n"
      "<cohort_topology version=\"1\">\n"
      "  <cpu id=\"cpu0\" numa=\"0\" vendor=\"intel\"/>\n"
      "  <gpu id=\"0000:17:00.0\" sm=\"90\"/>\n"
      "  <link a=\"cpu0\" b=\"0000:17:00.0\" type=\"pci\"/>\n";
  return lines_1_to_5 + "  " + extra + "\n</cohort_topology>\n";
}

// A second CPU and a link to it on line 6, with `attrs` added to the link.
std::string cpu_link_line_6(const std::string &attrs) {
  return with_line_6("<cpu id=\"cpu1\"/><link a=\"cpu0\" b=\"cpu1\" " + attrs + "/>");
}

constexpr char kNulText[] = "<cohort_topology version=\"1\">\n\n<cpu id=\"cpu\0\"/>";

const BadFile kBadFiles[] = {
    {"Empty", "", 1, {"empty"}},
    {"OnlyWhitespace", "\n  \n", 1, {"empty"}},
    {"NotXml", "this is not xml\n", 1, {"not well-formed XML"}},
    {"Truncated", with_line_6("").substr(0, 120), 4, {"not well-formed XML"}},
    {"RootNeverClosed",
     "<cohort_topology version=\"1\">\n  <cpu id=\"cpu0\"/>\n",
     3,
     {"not well-formed XML", "cohort_topology"}},
    {"MismatchedTags",
     "<cohort_topology version=\"1\">\n<cpu id=\"cpu0\"></gpu>\n</cohort_topology>",
     2,
     {"not well-formed XML", "mismatch"}},
    {"NulByte", std::string(kNulText, sizeof(kNulText) - 1), 3, {"not well-formed XML"}},
    {"WrongRoot",
     "<?xml version=\"1.0\"?>\n<topology version=\"1\"/>\n",
     2,
     {"root element is <topology>", "<cohort_topology>"}},
    {"UnsupportedVersion",
     "<?xml version=\"1.0\"?>\n<cohort_topology version=\"2\"/>\n",
     2,
     {"version='2'", "unsupported version"}},
    {"VersionNotANumber",
     "<cohort_topology version=\"one\"/>",
     1,
     {"version='one'", "unsupported"}},
    {"MissingVersion", "<cohort_topology host=\"h\"/>", 1, {"missing attribute 'version'"}},
    {"UnknownRootAttribute",
     "<cohort_topology version=\"1\" hots=\"x\"/>",
     1,
     {"unknown attribute 'hots'"}},
    {"UnknownElement",
     with_line_6("<switch id=\"0000:15:00.0\"/>"),
     6,
     {"unknown element <switch>"}},
    {"ElementNameIsCaseSensitive",
     with_line_6("<GPU id=\"0000:18:00.0\"/>"),
     6,
     {"unknown element <GPU>"}},
    {"NamespacedElement",
     with_line_6("<x:gpu xmlns:x=\"urn:x\" id=\"0000:18:00.0\"/>"),
     6,
     {"unknown element <x:gpu>"}},
    {"NodeWithoutId", with_line_6("<gpu sm=\"90\"/>"), 6, {"gpu: missing attribute 'id'"}},
    {"EmptyId", with_line_6("<cpu id=\"\"/>"), 6, {"cpu id=''", "empty"}},
    {"DuplicateId", with_line_6("<cpu id=\"cpu0\"/>"), 6, {"duplicate cpu id", "line 3"}},
    {"DuplicateIdAfterNormalization",
     with_line_6("<gpu id=\"17:00.0\"/>"),
     6,
     {"duplicate gpu id", "line 4"}},
    {"GpuIdNotABusId", with_line_6("<gpu id=\"gpu0\"/>"), 6, {"gpu id='gpu0'", "PCI bus id"}},
    {"PciIdNotABusId", with_line_6("<pci id=\"switch0\"/>"), 6, {"pci id='switch0'", "bus id"}},
    {"NicIdNotABusId", with_line_6("<nic id=\"mlx5_0\"/>"), 6, {"nic id='mlx5_0'", "bus id"}},
    {"BusIdDeviceOutOfRange", with_line_6("<gpu id=\"0000:17:20.0\"/>"), 6, {"bus id"}},
    {"LinkToUnknownId",
     with_line_6("<link a=\"cpu0\" b=\"cpu9\" type=\"cpu\"/>"),
     6,
     {"link b='cpu9'", "no node with this id"}},
    // The first link naming cpu0 (line 5) is where the ambiguity shows.
    {"AmbiguousId",
     with_line_6("<nvswitch id=\"cpu0\"/>"),
     5,
     {"link a='cpu0'", "ambiguous", "cpu", "nvswitch"}},
    {"LinkToItself", with_line_6("<link a=\"cpu0\" b=\"cpu0\" type=\"cpu\"/>"), 6, {"itself"}},
    {"LinkToItselfByAnotherSpelling",
     with_line_6("<link a=\"0000:17:00.0\" b=\"17:00.0\" type=\"nvlink\"/>"),
     6,
     {"itself"}},
    {"UnknownLinkType", cpu_link_line_6("type=\"upi\""), 6, {"type='upi'", "unknown link type"}},
    {"LinkMissingType", cpu_link_line_6(""), 6, {"link: missing attribute 'type'"}},
    {"LinkMissingB",
     with_line_6("<link a=\"cpu0\" type=\"cpu\"/>"),
     6,
     {"link: missing attribute 'b'"}},
    {"DuplicateLink",
     with_line_6("<link a=\"0000:17:00.0\" b=\"cpu0\" type=\"nvlink\"/>"),
     6,
     {"duplicate link", "line 5"}},
    {"SmNotANumber",
     with_line_6("<gpu id=\"0000:18:00.0\" sm=\"ninety\"/>"),
     6,
     {"sm='ninety'", "not an integer"}},
    {"SmNotAnInteger", with_line_6("<gpu id=\"0000:18:00.0\" sm=\"9.0\"/>"), 6, {"not an integer"}},
    {"SmWithSpaces", with_line_6("<gpu id=\"0000:18:00.0\" sm=\" 90\"/>"), 6, {"not an integer"}},
    {"SmNegative",
     with_line_6("<gpu id=\"0000:18:00.0\" sm=\"-1\"/>"),
     6,
     {"sm='-1'", "out of range"}},
    {"SmHuge",
     with_line_6("<gpu id=\"0000:18:00.0\" sm=\"99999999999999999999\"/>"),
     6,
     {"sm=", "not an integer"}},
    {"NumaBelowMinusOne",
     with_line_6("<cpu id=\"cpu1\" numa=\"-2\"/>"),
     6,
     {"numa='-2'", "out of range"}},
    {"CountZero",
     with_line_6("<gpu id=\"0000:18:00.0\"/><link a=\"0000:17:00.0\" b=\"0000:18:00.0\" "
                 "type=\"nvlink\" count=\"0\"/>"),
     6,
     {"count='0'", "out of range"}},
    {"CountOnACpuLink", cpu_link_line_6("type=\"cpu\" count=\"2\""), 6, {"count='2'", "nvlink"}},
    {"GenTooHigh", cpu_link_line_6("type=\"pci\" gen=\"7\""), 6, {"gen='7'", "out of range 1..6"}},
    {"GenZero", cpu_link_line_6("type=\"pci\" gen=\"0\""), 6, {"gen='0'", "out of range"}},
    {"WidthTooWide",
     cpu_link_line_6("type=\"pci\" width=\"64\""),
     6,
     {"width='64'", "out of range 1..32"}},
    {"BwZero", cpu_link_line_6("type=\"cpu\" bw=\"0\""), 6, {"bw='0'", "> 0"}},
    {"BwNegative", cpu_link_line_6("type=\"cpu\" bw=\"-5\""), 6, {"bw='-5'", "> 0"}},
    {"BwNotANumber", cpu_link_line_6("type=\"cpu\" bw=\"fast\""), 6, {"bw='fast'", "not a number"}},
    {"BwNan", cpu_link_line_6("type=\"cpu\" bw=\"nan\""), 6, {"not a number"}},
    {"BwInfinite", cpu_link_line_6("type=\"cpu\" bw=\"1e999\""), 6, {"not a number"}},
    {"BwDecimalComma", cpu_link_line_6("type=\"cpu\" bw=\"10,5\""), 6, {"not a number"}},
    {"BwBackZero", cpu_link_line_6("type=\"cpu\" bw_back=\"0\""), 6, {"bw_back='0'", "> 0"}},
    {"SpeedNegative",
     with_line_6("<nic id=\"0000:18:00.0\" speed=\"-1\"/>"),
     6,
     {"speed='-1'", ">= 0"}},
    {"UnknownAttribute",
     with_line_6("<gpu id=\"0000:18:00.0\" cuda_device=\"0\"/>"),
     6,
     {"unknown attribute 'cuda_device'", "id, sm, uuid"}},
    {"MisspeltLinkAttribute",
     cpu_link_line_6("type=\"cpu\" bandwidth=\"5\""),
     6,
     {"unknown attribute 'bandwidth'"}},
    {"TextInRoot", with_line_6("hello"), 6, {"unexpected text in <cohort_topology>"}},
    {"TextAfterBlankLines", with_line_6("\n\n  hello\n  world\n"), 8, {"unexpected text"}},
    {"CdataInRoot", with_line_6("<![CDATA[x]]>"), 6, {"unexpected text"}},
    {"EntityInRoot",
     "<!DOCTYPE c [<!ENTITY e \"x\">]>\n<cohort_topology version=\"1\">&e;</cohort_topology>",
     1,
     {"<!DOCTYPE>", "no DTD and no entities", "(rule: no DOCTYPE)"}},
    {"ElementInsideNode",
     with_line_6("<gpu id=\"0000:18:00.0\"><uuid/></gpu>"),
     6,
     {"<uuid> inside <gpu>"}},
    {"TextInsideNode", with_line_6("<cpu id=\"cpu1\">1</cpu>"), 6, {"unexpected text in <cpu>"}},
    {"NoP2pUnknownGpu",
     with_line_6("<no_p2p a=\"0000:17:00.0\" b=\"cpu0\"/>"),
     6,
     {"no_p2p b='cpu0'", "no gpu"}},
    {"NoP2pSameGpu", with_line_6("<no_p2p a=\"0000:17:00.0\" b=\"17:00.0\"/>"), 6, {"itself"}},
    {"NoP2pMissingB",
     with_line_6("<no_p2p a=\"0000:17:00.0\"/>"),
     6,
     {"no_p2p: missing attribute 'b'"}},
    {"AssumedWithoutText", with_line_6("<assumed/>"), 6, {"assumed: missing attribute 'text'"}},
};

class TopoXmlBadFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(TopoXmlBadFile, NamesLineAndProblem) {
  const BadFile &bad = GetParam();
  Topology topo;
  topo.host = "untouched";
  ASSERT_EQ(from_xml(bad.text, "bad.xml", &topo), COHORT_ERR_INVALID_ARG) << bad.text;
  const std::string &message = last_error();
  const std::string prefix = "topology file bad.xml line " + std::to_string(bad.line) + ": ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
  for (const std::string &word : bad.words) {
    EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
  }
  EXPECT_EQ(topo.host, "untouched");
}

INSTANTIATE_TEST_SUITE_P(TopoXml, TopoXmlBadFile, ::testing::ValuesIn(kBadFiles),
                         [](const ::testing::TestParamInfo<BadFile> &info) {
                           return std::string(info.param.name);
                         });

// The cases' base file is itself valid, so each error above comes from its one change.
TEST(TopoXmlErrors, BaseOfTheBadFilesIsValid) {
  Topology topo;
  EXPECT_EQ(from_xml(with_line_6(""), "base.xml", &topo), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(from_xml(with_line_6("<cpu id=\"cpu1\"/><link a=\"cpu0\" b=\"cpu1\" type=\"cpu\"/>"),
                     "base.xml", &topo),
            COHORT_SUCCESS)
      << last_error();
}

// libxml2 prints parser and encoding errors to stderr unless told otherwise; a library must not.
TEST(TopoXmlErrors, NothingPrintedToStderr) {
  std::vector<std::string> inputs;
  for (const BadFile &bad : kBadFiles) inputs.push_back(bad.text);
  inputs.push_back("<?xml version=\"1.0\" encoding=\"EUC-JP\"?>\n<a>\xff\xfe\xff</a>");
  inputs.push_back("<?xml version=\"1.0\" encoding=\"no-such-encoding\"?>\n<a/>");
  inputs.push_back("<cohort_topology version=\"1\">\xc3\x28</cohort_topology>");
  inputs.push_back("<!DOCTYPE x SYSTEM \"http://example.invalid/x.dtd\"><cohort_topology/>");
  // An external entity is neither fetched nor expanded: the reference is unexpected content.
  inputs.push_back(
      "<!DOCTYPE c [<!ENTITY e SYSTEM \"/etc/hostname\">]>"
      "<cohort_topology version=\"1\">&e;</cohort_topology>");
  ::testing::internal::CaptureStderr();
  for (const std::string &text : inputs) {
    Topology topo;
    EXPECT_EQ(from_xml(text, "quiet.xml", &topo), COHORT_ERR_INVALID_ARG) << text;
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// -------------------------------------------------------------- inputs that must not crash

// Either an error that names the source, or a topology that validates and dumps stably.
void expect_handled(const std::string &text, const std::string &what) {
  Topology topo;
  const Status s = from_xml(text, "fuzz.xml", &topo);
  if (s == COHORT_SUCCESS) {
    EXPECT_EQ(validate(topo), COHORT_SUCCESS) << what << ": " << last_error();
    const std::string dump = to_xml(topo);
    Topology again;
    ASSERT_EQ(from_xml(dump, "fuzz-dump.xml", &again), COHORT_SUCCESS) << what << ": " << dump;
    EXPECT_EQ(to_xml(again), dump) << what;
    return;
  }
  EXPECT_EQ(s, COHORT_ERR_INVALID_ARG) << what;
  EXPECT_EQ(last_error().rfind("topology file fuzz.xml", 0), 0u) << what << ": " << last_error();
}

TEST(TopoXmlFuzz, RandomGarbage) {
  std::mt19937 random(12345);
  const char *const tokens[] = {"<",
                                ">",
                                "/>",
                                "</",
                                "=",
                                "\"",
                                " ",
                                "\n",
                                "cohort_topology",
                                "version=\"1\"",
                                "gpu",
                                "cpu",
                                "link",
                                "id=",
                                "a=",
                                "b=",
                                "type=\"pci\"",
                                "0000:17:00.0",
                                "cpu0",
                                "&amp;",
                                "<!--",
                                "-->",
                                "<![CDATA[",
                                "]]>",
                                "&#0;",
                                "\xff",
                                "<?xml",
                                "?>"};
  for (int i = 0; i < 400; ++i) {
    std::string text;
    const int length = static_cast<int>(random() % 200);
    for (int j = 0; j < length; ++j) {
      if (i % 2 == 0) {
        text += static_cast<char>(random() % 256);
      } else {
        text += tokens[random() % (sizeof(tokens) / sizeof(tokens[0]))];
      }
    }
    expect_handled(text, "garbage " + std::to_string(i));
  }
}

TEST(TopoXmlFuzz, EveryTruncationOfTheReferenceFiles) {
  for (const char *name : {"v100-4gpu-allpairs.xml", "vm-flat.xml", "pcie-2gpu-sys.xml"}) {
    const std::string text = read_text(reference_path(name));
    ASSERT_FALSE(text.empty()) << name;
    const size_t complete = text.rfind("</cohort_topology>") + strlen("</cohort_topology>");
    for (size_t length = 0; length <= text.size(); ++length) {
      const std::string prefix = text.substr(0, length);
      Topology topo;
      const Status s = from_xml(prefix, "fuzz.xml", &topo);
      // Only a prefix that still holds the closing root tag is a whole document.
      EXPECT_EQ(s == COHORT_SUCCESS, length >= complete) << name << " cut at " << length;
      if (s != COHORT_SUCCESS) {
        EXPECT_EQ(last_error().rfind("topology file fuzz.xml line ", 0), 0u) << last_error();
      }
    }
  }
}

TEST(TopoXmlFuzz, RandomEditsOfAReferenceFile) {
  const std::string text = read_text(reference_path("h100-8gpu-nvswitch.xml"));
  ASSERT_FALSE(text.empty());
  std::mt19937 random(777);
  const std::string alphabet = "<>/=\" \n0123456789abcdef:.-xgpulinkcvsw&;#";
  for (int i = 0; i < 600; ++i) {
    std::string edited = text;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !edited.empty(); ++e) {
      const size_t at = random() % edited.size();
      const char c =
          i % 3 == 0 ? static_cast<char>(random() % 256) : alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0: edited[at] = c; break;
        case 1: edited.erase(at, 1 + random() % 8); break;
        default: edited.insert(at, 1, c); break;
      }
    }
    expect_handled(edited, "edit " + std::to_string(i));
  }
}

// ------------------------------------------------------------------------------- files

std::string temp_path(const std::string &name) {
  return ::testing::TempDir() + "cohort_topo_xml_" + std::to_string(getpid()) + "_" + name;
}

TEST(TopoXmlFile, WriteThenRead) {
  const Topology topo = sample_topology();
  const std::string path = temp_path("sample.xml");
  ASSERT_EQ(write_xml_file(topo, path), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(read_text(path), to_xml(topo));
  // Writing again replaces the file rather than appending to it.
  ASSERT_EQ(write_xml_file(topo, path), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(read_text(path), to_xml(topo));
  Topology loaded;
  ASSERT_EQ(read_xml_file(path, &loaded), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(to_xml(loaded), to_xml(topo));
  unlink(path.c_str());
}

TEST(TopoXmlFile, ParseErrorsNameThePath) {
  const std::string path = temp_path("bad.xml");
  std::ofstream(path) << "<cohort_topology version=\"1\">\n  <gpu id=\"x\"/>\n</cohort_topology>\n";
  Topology topo;
  EXPECT_EQ(read_xml_file(path, &topo), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error().rfind("topology file " + path + " line 2: gpu id='x'", 0), 0u)
      << last_error();
  unlink(path.c_str());
}

TEST(TopoXmlFile, UnreadableFileNamesPathAndReason) {
  Topology topo;
  const std::string missing = "/nonexistent-cohort-dir/topo.xml";
  EXPECT_EQ(read_xml_file(missing, &topo), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find(missing), std::string::npos) << last_error();
  EXPECT_NE(last_error().find(strerror(ENOENT)), std::string::npos) << last_error();
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(read_xml_file(dir, &topo), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find(strerror(EISDIR)), std::string::npos) << last_error();
  const std::string empty = temp_path("empty.xml");
  std::ofstream(empty).flush();
  EXPECT_EQ(read_xml_file(empty, &topo), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "topology file " + empty + " line 1: the file is empty");
  unlink(empty.c_str());
}

TEST(TopoXmlFile, UnwritablePathIsASystemError) {
  const std::string path = "/nonexistent-cohort-dir/dump.xml";
  EXPECT_EQ(write_xml_file(sample_topology(), path), COHORT_ERR_SYSTEM);
  EXPECT_NE(last_error().find(path), std::string::npos) << last_error();
  EXPECT_NE(last_error().find(strerror(ENOENT)), std::string::npos) << last_error();
  if (access("/dev/full", W_OK) == 0) {
    EXPECT_EQ(write_xml_file(sample_topology(), "/dev/full"), COHORT_ERR_SYSTEM);
    EXPECT_NE(last_error().find(strerror(ENOSPC)), std::string::npos) << last_error();
  }
}

// ----------------------------------------------------------------------------- threads

TEST(TopoXmlThreads, ConcurrentLoadsAreIndependent) {
  const std::string good = read_text(reference_path("h100-8gpu-nvswitch.xml"));
  const std::string expected_dump = to_xml(load_reference("h100-8gpu-nvswitch.xml"));
  const std::string bad = with_line_6("<gpu id=\"nope\"/>");
  constexpr int kThreads = 8;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string source = "t" + std::to_string(t) + ".xml";
      for (int i = 0; i < 30; ++i) {
        Topology topo;
        if (from_xml(good, source, &topo) != COHORT_SUCCESS || to_xml(topo) != expected_dump) {
          ++failures[t];
        }
        if (from_xml(bad, source, &topo) != COHORT_ERR_INVALID_ARG ||
            last_error().rfind("topology file " + source + " line 6: gpu id='nope'", 0) != 0) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread &thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace cohort::topo
