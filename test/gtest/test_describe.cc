// The text views of cohort_info --topo: the path matrix puts the right type in the right cell,
// names GPUs by index order, reports assumptions, and the graph view lists every ring whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "topo/describe.h"
#include "topo/paths.h"
#include "topo/search.h"
#include "topo/topo.h"
#include "topo/trees.h"

namespace cohort::topo {
namespace {

std::vector<std::string> words(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

std::vector<std::string> lines(const std::string &text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The indented lines of the table under the first line starting with `title`: header first.
std::vector<std::string> table_after(const std::string &text, const std::string &title) {
  std::vector<std::string> all = lines(text);
  std::vector<std::string> table;
  size_t i = 0;
  while (i < all.size() && all[i].rfind(title, 0) != 0) ++i;
  for (++i; i < all.size() && all[i].rfind("  ", 0) == 0; ++i) table.push_back(all[i]);
  return table;
}

// The cell of `table` in the row named `row` and the column headed `column`; "" if absent.
// The header has no word over the row names, so a row's words sit one to the right.
std::string cell(const std::vector<std::string> &table, const std::string &row,
                 const std::string &column) {
  if (table.empty()) return "";
  std::vector<std::string> header = words(table[0]);
  auto col = std::find(header.begin(), header.end(), column);
  if (col == header.end()) return "";
  const size_t index = static_cast<size_t>(col - header.begin()) + 1;
  for (size_t r = 1; r < table.size(); ++r) {
    std::vector<std::string> cells = words(table[r]);
    if (!cells.empty() && cells[0] == row) return index < cells.size() ? cells[index] : "";
  }
  return "";
}

std::vector<std::string> type_table(const std::string &matrix) {
  return table_after(matrix, "paths between GPUs and NICs");
}

Node cpu_node(const std::string &id, int numa) {
  Node node;
  node.type = NodeType::kCpu;
  node.id = id;
  node.numa = numa;
  node.arch = "x86_64";
  node.vendor = "intel";
  return node;
}

Node device(NodeType type, const std::string &id) {
  Node node;
  node.type = type;
  node.id = id;
  if (type == NodeType::kGpu) node.sm = 90;
  return node;
}

// cpu0 - PCIe switch - {GPU0, GPU1, NIC0 (port net0)}; optionally GPU0-GPU1 over 4 NVLinks.
struct SwitchHost {
  Topology topo;
  int cpu, pci, gpu0, gpu1, nic, net;

  explicit SwitchHost(bool nvlink) {
    topo.host = "switch-host";
    cpu = topo.add_node(cpu_node("cpu0", 0));
    pci = topo.add_node(device(NodeType::kPci, "0000:10:00.0"));
    gpu0 = topo.add_node(device(NodeType::kGpu, "0000:11:00.0"));
    gpu1 = topo.add_node(device(NodeType::kGpu, "0000:12:00.0"));
    Node nic_node = device(NodeType::kNic, "0000:13:00.0");
    nic_node.name = "mlx5_0";
    nic_node.speed_gbps = 200;
    nic = topo.add_node(nic_node);
    net = topo.add_node(device(NodeType::kNet, "net0"));
    topo.connect(cpu, pci, LinkType::kPci, 25.2);
    topo.connect(pci, gpu0, LinkType::kPci, 25.2);
    topo.connect(pci, gpu1, LinkType::kPci, 25.2);
    topo.connect(pci, nic, LinkType::kPci, 25.2);
    topo.connect(nic, net, LinkType::kNet, 25.0);
    if (nvlink) topo.connect(gpu0, gpu1, LinkType::kNvLink, 82.4, -1, 4);
  }
};

TEST(DescribeTopo, PciSwitchPairIsPixWithXOnTheDiagonal) {
  SwitchHost host(false);
  Paths paths(host.topo);
  std::vector<std::string> table = type_table(describe_matrix(host.topo, paths));
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(cell(table, "GPU0", "GPU1"), "PIX");
  EXPECT_EQ(cell(table, "GPU1", "GPU0"), "PIX");
  EXPECT_EQ(cell(table, "GPU0", "GPU0"), "X");
  EXPECT_EQ(cell(table, "GPU1", "GPU1"), "X");
  EXPECT_EQ(cell(table, "NIC0", "NIC0"), "X");
  EXPECT_EQ(cell(table, "GPU0", "NIC0"), "PIX");
  EXPECT_EQ(cell(table, "GPU0", "CPU"), "cpu0");
  EXPECT_EQ(cell(table, "NIC0", "NUMA"), "0");
  EXPECT_EQ(cell(table, "NIC0", "device"), "mlx5_0");
}

TEST(DescribeTopo, NvlinkPairIsNvlWithItsBandwidth) {
  SwitchHost host(true);
  Paths paths(host.topo);
  std::string matrix = describe_matrix(host.topo, paths);
  std::vector<std::string> types = type_table(matrix);
  EXPECT_EQ(cell(types, "GPU0", "GPU1"), "NVL");
  EXPECT_EQ(cell(types, "GPU1", "GPU0"), "NVL");
  EXPECT_EQ(cell(types, "GPU0", "NIC0"), "PIX");  // NVLink does not reach the NIC
  std::vector<std::string> bw = table_after(matrix, "bandwidth of those paths");
  EXPECT_EQ(cell(bw, "GPU0", "GPU1"), "82.4");
  EXPECT_EQ(cell(bw, "GPU0", "NIC0"), "25.2");
  EXPECT_EQ(cell(bw, "GPU0", "GPU0"), "X");

  std::string text = describe_topology(host.topo);
  EXPECT_NE(text.find("4 NVLinks"), std::string::npos) << text;
  EXPECT_NE(text.find("to GPU1 x4"), std::string::npos) << text;
}

TEST(DescribeTopo, TwoSocketsGiveSysAndEachGpuItsOwnNuma) {
  Topology topo;
  int cpu0 = topo.add_node(cpu_node("cpu0", 0));
  int cpu1 = topo.add_node(cpu_node("cpu1", 1));
  // GPU order is node order, whatever the bus ids say.
  int late = topo.add_node(device(NodeType::kGpu, "0000:ca:00.0"));
  int early = topo.add_node(device(NodeType::kGpu, "0000:17:00.0"));
  topo.connect(cpu0, cpu1, LinkType::kCpu, 10);
  topo.connect(cpu1, late, LinkType::kPci, 25.2);
  topo.connect(cpu0, early, LinkType::kPci, 25.2);
  Paths paths(topo);
  std::string matrix = describe_matrix(topo, paths);
  std::vector<std::string> table = type_table(matrix);
  EXPECT_EQ(cell(table, "GPU0", "GPU1"), "SYS");
  EXPECT_EQ(cell(table, "GPU0", "CPU"), "cpu1");  // GPU0 is the first GPU node: on cpu1
  EXPECT_EQ(cell(table, "GPU0", "NUMA"), "1");
  EXPECT_EQ(cell(table, "GPU0", "device"), "0000:ca:00.0");
  EXPECT_EQ(cell(table, "GPU1", "CPU"), "cpu0");
  // Intel: P2P up to PXB, so SYS goes through host memory.
  std::vector<std::string> transport = table_after(matrix, "P2P level PXB");
  EXPECT_EQ(cell(transport, "GPU0", "GPU1"), "SHM");
  EXPECT_EQ(local_cpu(topo, paths, early), cpu0);
  EXPECT_EQ(local_cpu(topo, paths, late), cpu1);
}

TEST(DescribeTopo, TransportFollowsTheP2pLevelAndPeerAccess) {
  SwitchHost host(false);
  PathOptions options;
  options.p2p_level = PathType::kPix;
  Paths at_pix(host.topo, options);
  std::vector<std::string> table = table_after(describe_matrix(host.topo, at_pix), "P2P level PIX");
  EXPECT_EQ(cell(table, "GPU0", "GPU1"), "P2P");
  options.p2p_level = PathType::kLoc;
  Paths at_loc(host.topo, options);
  table = table_after(describe_matrix(host.topo, at_loc), "P2P level LOC");
  EXPECT_EQ(cell(table, "GPU1", "GPU0"), "SHM");
  host.topo.no_p2p.push_back({"0000:11:00.0", "0000:12:00.0"});
  Paths denied(host.topo);
  std::string matrix = describe_matrix(host.topo, denied);
  EXPECT_EQ(cell(table_after(matrix, "P2P level PXB"), "GPU0", "GPU1"), "SHM*");
  EXPECT_NE(describe_topology(host.topo).find("no peer access (CUDA runtime): GPU0-GPU1"),
            std::string::npos);
}

TEST(DescribeTopo, AssumptionsAreListed) {
  SwitchHost host(false);
  EXPECT_NE(describe_topology(host.topo).find("no assumptions"), std::string::npos);
  host.topo.assumptions = {"NUMA unknown: one CPU assumed", "flat PCI tree"};
  std::string text = describe_topology(host.topo);
  EXPECT_NE(text.find("assumed: NUMA unknown: one CPU assumed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("assumed: flat PCI tree\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("no assumptions"), std::string::npos) << text;
  EXPECT_NE(text.find("host: switch-host"), std::string::npos);
  EXPECT_NE(text.find("mlx5_0"), std::string::npos);
}

// Four GPUs on one switch: the search's rings, as printed, hold every GPU exactly once.
TEST(DescribeTopo, GraphListsEveryRingWithEveryGpuOnce) {
  Topology topo;
  int cpu = topo.add_node(cpu_node("cpu0", 0));
  int pci = topo.add_node(device(NodeType::kPci, "0000:10:00.0"));
  topo.connect(cpu, pci, LinkType::kPci, 25.2);
  std::vector<std::string> names;
  for (int g = 0; g < 4; ++g) {
    int gpu = topo.add_node(device(NodeType::kGpu, "0000:1" + std::to_string(g + 1) + ":00.0"));
    topo.connect(pci, gpu, LinkType::kPci, 25.2);
    names.push_back("GPU" + std::to_string(g));
  }
  Paths paths(topo);
  NodeGraph graph = search_rings(topo, paths, topo.of_type(NodeType::kGpu), SearchOptions{});
  ASSERT_FALSE(graph.rings.empty());
  std::string text = describe_graph(topo, graph, 1);
  size_t rings = 0;
  for (const std::string &line : lines(text)) {
    std::vector<std::string> w = words(line);
    if (w.size() < 2 || w[0] != "ring") continue;
    EXPECT_EQ(w[1], std::to_string(rings) + ":") << line;
    ++rings;
    std::vector<std::string> hops;
    for (size_t i = 2; i < w.size(); i += 2) hops.push_back(w[i]);
    for (size_t i = 3; i < w.size(); i += 2) EXPECT_EQ(w[i], "->") << line;
    ASSERT_EQ(hops.size(), names.size() + 1) << line;
    EXPECT_EQ(hops.front(), hops.back()) << "a ring closes where it starts: " << line;
    hops.pop_back();
    std::sort(hops.begin(), hops.end());
    EXPECT_EQ(hops, names) << line;
  }
  EXPECT_EQ(rings, graph.rings.size()) << text;
  EXPECT_NE(text.find(std::to_string(graph.rings.size()) + " channel"), std::string::npos);
  EXPECT_EQ(text.find("trees across"), std::string::npos) << "one host has no host tree";
}

TEST(DescribeTopo, GraphNamesNetsChainsAndHostTrees) {
  SwitchHost host(false);
  NodeGraph graph;
  graph.rings = {{host.gpu1, host.gpu0}, {host.gpu0, host.gpu1}};
  graph.nets = {host.net, -1};
  graph.bw = 12;
  graph.intra_type = PathType::kPix;
  graph.net_type = PathType::kPix;
  std::string text = describe_graph(host.topo, graph, 5);
  EXPECT_NE(text.find("2 channels x 12.0 GB/s = 24.0 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("  ring 0: net0 -> GPU1 -> GPU0 -> net0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  ring 1: GPU0 -> GPU1 -> GPU0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  chain 0: GPU1 > GPU0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU-NIC PIX"), std::string::npos) << text;

  std::vector<std::string> trees = table_after(text, "trees across 5 hosts");
  ASSERT_EQ(trees.size(), 3u) << text;
  for (int t = 0; t < 2; ++t) {
    std::vector<TreeNode> tree = binary_tree(5, t);
    std::vector<std::string> row = words(trees[t + 1]);
    ASSERT_EQ(row.size(), 2u + 5u + 2u) << trees[t + 1];  // "tree t", 5 parents, "(depth d)"
    for (int h = 0; h < 5; ++h) {
      std::string expected = tree[h].parent >= 0 ? std::to_string(tree[h].parent) : "-";
      EXPECT_EQ(row[2 + h], expected) << "tree " << t << " host " << h;
    }
  }
}

TEST(DescribeTopo, HostTreeTableIsCapped) {
  SwitchHost host(false);
  NodeGraph graph;
  graph.rings = {{host.gpu0, host.gpu1}};
  graph.nets = {-1};
  std::string text = describe_graph(host.topo, graph, 100);
  std::vector<std::string> trees = table_after(text, "trees across 100 hosts");
  ASSERT_EQ(trees.size(), 3u) << text;
  EXPECT_EQ(words(trees[0]).size(), 1u + 16u) << trees[0];
  EXPECT_NE(text.find("the first 16 hosts"), std::string::npos) << text;
}

TEST(DescribeTopo, NoGpusSaysHostMemory) {
  Topology topo;
  int cpu = topo.add_node(cpu_node("cpu0", 0));
  int nic = topo.add_node(device(NodeType::kNic, "0000:00:03.0"));
  topo.connect(cpu, nic, LinkType::kPci, 12.6);
  Paths paths(topo);
  NodeGraph graph = search_rings(topo, paths, topo.of_type(NodeType::kGpu), SearchOptions{});
  EXPECT_EQ(describe_graph(topo, graph, 1),
            "no GPUs: collectives run on host memory; rings follow rank order by NUMA node\n");
  std::string matrix = describe_matrix(topo, paths);
  EXPECT_EQ(cell(type_table(matrix), "NIC0", "CPU"), "cpu0") << matrix;
  std::string text = describe_topology(topo);
  EXPECT_NE(text.find("GPUs: none"), std::string::npos) << text;
  EXPECT_NE(text.find("cpu0  numa 0  x86_64  intel"), std::string::npos) << text;
}

TEST(DescribeTopo, LabelsCountEachTypeInIndexOrder) {
  Topology topo;
  topo.add_node(device(NodeType::kNic, "0000:05:00.0"));
  topo.add_node(device(NodeType::kGpu, "0000:09:00.0"));
  topo.add_node(cpu_node("cpu0", 0));
  topo.add_node(device(NodeType::kGpu, "0000:01:00.0"));
  topo.add_node(device(NodeType::kNic, "0000:02:00.0"));
  EXPECT_EQ(node_labels(topo), (std::vector<std::string>{"NIC0", "GPU0", "cpu0", "GPU1", "NIC1"}));
}

}  // namespace
}  // namespace cohort::topo
