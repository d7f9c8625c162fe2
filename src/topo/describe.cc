#include "topo/describe.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/status.h"
#include "topo/bandwidth.h"
#include "topo/trees.h"

namespace cohort::topo {
namespace {

using Row = std::vector<std::string>;

// Hosts shown in the tree table; more only make the lines unreadable.
constexpr int kMaxHostsShown = 16;

struct LegendRow {
  const char *name;
  const char *meaning;
};
constexpr LegendRow kLegend[] = {
    {"X", "the device itself"},
    {"LOC", "the same device (ranks sharing one GPU)"},
    {"NVL", "NVLink, direct or through the NVSwitch fabric"},
    {"NVB", "NVLink through an intermediate GPU"},
    {"PIX", "PCIe through at most one PCIe switch"},
    {"PXB", "PCIe through several PCIe switches, not through a CPU"},
    {"PHB", "PCIe through a CPU's host bridge"},
    {"SYS", "PCIe and the CPU-CPU interconnect (UPI, xGMI) between NUMA nodes"},
    {"NET", "across the network (another host)"},
    {"DIS", "no path"},
};

// Left-aligned columns two spaces apart, every line indented by two.
std::string render_table(const std::vector<Row> &rows) {
  std::vector<size_t> width;
  for (const Row &row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const Row &row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string numa_text(int numa) { return numa >= 0 ? std::to_string(numa) : "?"; }

std::string speed_text(double gbps) {
  return gbps > 0 ? strprintf("%g Gb/s", gbps) : std::string("speed ?");
}

// The network port of a NIC, or -1.
int nic_port(const Topology &topo, int nic) {
  for (int l : topo.nodes[nic].links) {
    if (topo.links[l].type == LinkType::kNet) return topo.links[l].to;
  }
  return -1;
}

bool peer_access_denied(const Topology &topo, int a, int b) {
  const std::string &x = topo.nodes[a].id;
  const std::string &y = topo.nodes[b].id;
  for (const auto &pair : topo.no_p2p) {
    if ((pair.first == x && pair.second == y) || (pair.first == y && pair.second == x)) {
      return true;
    }
  }
  return false;
}

// What a matrix row names after its cells: the bus id of a GPU; name, bus id, speed of a NIC.
std::string device_text(const Topology &topo, int node) {
  const Node &n = topo.nodes[node];
  if (n.type != NodeType::kNic) return n.id;
  return strprintf("%s %s %s", n.name.empty() ? "?" : n.name.c_str(), n.id.c_str(),
                   speed_text(n.speed_gbps).c_str());
}

std::string type_matrix(const Topology &topo, const Paths &paths, const std::vector<int> &devices,
                        const std::vector<std::string> &labels) {
  std::vector<Row> rows;
  Row header{""};
  for (int d : devices) header.push_back(labels[d]);
  header.insert(header.end(), {"CPU", "NUMA", "device"});
  rows.push_back(header);
  for (int from : devices) {
    Row row{labels[from]};
    for (int to : devices) {
      row.push_back(from == to ? "X" : path_type_name(paths.get(from, to).type));
    }
    int cpu = local_cpu(topo, paths, from);
    row.push_back(cpu >= 0 ? labels[cpu] : "-");
    row.push_back(cpu >= 0 ? numa_text(topo.nodes[cpu].numa) : "-");
    row.push_back(device_text(topo, from));
    rows.push_back(row);
  }
  return "paths between GPUs and NICs (type of the best path; CPU: the closest NUMA domain):\n" +
         render_table(rows);
}

std::string bandwidth_matrix(const Paths &paths, const std::vector<int> &devices,
                             const std::vector<std::string> &labels) {
  std::vector<Row> rows;
  Row header{""};
  for (int d : devices) header.push_back(labels[d]);
  rows.push_back(header);
  for (int from : devices) {
    Row row{labels[from]};
    for (int to : devices) {
      const Path &path = paths.get(from, to);
      if (from == to) {
        row.push_back("X");
      } else {
        row.push_back(path.type == PathType::kDis ? "-" : strprintf("%.1f", path.bw));
      }
    }
    rows.push_back(row);
  }
  return "bandwidth of those paths (GB/s per direction, the narrowest link):\n" +
         render_table(rows);
}

std::string transport_matrix(const Topology &topo, const Paths &paths, const std::vector<int> &gpus,
                             const std::vector<std::string> &labels) {
  const char *level = path_type_name(paths.p2p_level());
  std::string out = strprintf(
      "P2P level %s: GPU pairs whose path is %s or better use P2P (CUDA IPC), the others SHM "
      "(through host memory):\n",
      level, level);
  std::vector<Row> rows;
  Row header{""};
  for (int g : gpus) header.push_back(labels[g]);
  rows.push_back(header);
  bool denied = false;
  for (int a : gpus) {
    Row row{labels[a]};
    for (int b : gpus) {
      if (a == b) {
        row.push_back("X");
        continue;
      }
      std::string cell = transport_name(paths.gpu_transport(a, b));
      if (peer_access_denied(topo, a, b)) {
        cell += "*";
        denied = true;
      }
      row.push_back(cell);
    }
    rows.push_back(row);
  }
  out += render_table(rows);
  if (denied) out += "  * the CUDA runtime reports no peer access for this pair\n";
  return out;
}

std::string legend() {
  std::string out = "legend:\n";
  for (const LegendRow &row : kLegend) out += strprintf("  %-3s  %s\n", row.name, row.meaning);
  return out;
}

// "<what>: none", or "<what><note>:" over a table of one row per node of `type`.
template <typename RowOf>
std::string node_section(const Topology &topo, NodeType type, const std::string &what,
                         const std::string &note, RowOf row_of) {
  std::vector<int> nodes = topo.of_type(type);
  if (nodes.empty()) return what + ": none\n";
  std::vector<Row> rows;
  for (int n : nodes) rows.push_back(row_of(n, topo.nodes[n]));
  return what + note + ":\n" + render_table(rows);
}

std::string cpu_section(const Topology &topo, const std::vector<std::string> &labels) {
  std::string out = node_section(
      topo, NodeType::kCpu, "CPUs", " (one per NUMA domain)", [&](int c, const Node &cpu) {
        return Row{labels[c], "numa " + numa_text(cpu.numa), cpu.arch.empty() ? "?" : cpu.arch,
                   cpu.vendor.empty() ? "?" : cpu.vendor};
      });
  for (const Link &link : topo.links) {
    if (link.type == LinkType::kCpu && link.from < link.to) {
      out += strprintf("  %s <-> %s: CPU interconnect %.1f GB/s\n", labels[link.from].c_str(),
                       labels[link.to].c_str(), link.bw);
    }
  }
  return out;
}

std::string gpu_section(const Topology &topo, const std::vector<std::string> &labels) {
  return node_section(topo, NodeType::kGpu, "GPUs", "", [&](int g, const Node &gpu) {
    return Row{labels[g], gpu.id, gpu.sm > 0 ? strprintf("sm_%d", gpu.sm) : "sm ?",
               "uuid " + (gpu.uuid.empty() ? std::string("?") : gpu.uuid),
               gpu.cuda_device >= 0 ? strprintf("cuda device %d", gpu.cuda_device)
                                    : std::string("not visible to CUDA here")};
  });
}

std::string nic_section(const Topology &topo, const std::vector<std::string> &labels) {
  return node_section(topo, NodeType::kNic, "NICs", "", [&](int n, const Node &nic) {
    const int port = nic_port(topo, n);
    return Row{labels[n], nic.id, nic.name.empty() ? "?" : nic.name, speed_text(nic.speed_gbps),
               port >= 0 ? "port " + labels[port] : std::string("no network port")};
  });
}

// Per GPU: its NVLinks in all and to each peer ("GPU0  18 NVLinks, 370.8 GB/s: nvswitch x18").
std::string nvlink_section(const Topology &topo, const std::vector<std::string> &labels) {
  std::vector<Row> rows;
  for (int g : topo.of_type(NodeType::kGpu)) {
    std::map<int, int> per_peer;
    int count = 0;
    double bw = 0;
    for (int l : topo.nodes[g].links) {
      const Link &link = topo.links[l];
      if (link.type != LinkType::kNvLink) continue;
      per_peer[link.to] += link.count;
      count += link.count;
      bw += link.bw;
    }
    if (count == 0) continue;
    std::string peers;
    for (const auto &[peer, links] : per_peer) {
      peers += strprintf("%s%s x%d", peers.empty() ? "" : ", ", labels[peer].c_str(), links);
    }
    const int sm = topo.nodes[g].sm;
    rows.push_back({labels[g], strprintf("%d NVLinks", count), strprintf("%.1f GB/s", bw),
                    sm > 0 ? nvlink_generation(sm) : "NVLink", "to " + peers});
  }
  if (rows.empty()) return "NVLink: none\n";
  return "NVLink (per GPU: links, bandwidth out, generation, peers):\n" + render_table(rows);
}

std::string node_counts(const Topology &topo) {
  std::string out = strprintf("nodes: %zu (", topo.nodes.size());
  for (int t = 0; t < static_cast<int>(NodeType::kCount); ++t) {
    NodeType type = static_cast<NodeType>(t);
    out +=
        strprintf("%s%zu %s", t == 0 ? "" : ", ", topo.of_type(type).size(), node_type_name(type));
  }
  return out + strprintf("), links: %zu\n", topo.links.size() / 2);
}

std::string ring_text(const NodeGraph &graph, size_t channel,
                      const std::vector<std::string> &labels) {
  const std::vector<int> &ring = graph.rings[channel];
  const int net = channel < graph.nets.size() ? graph.nets[channel] : -1;
  std::string out;
  if (net >= 0) out += labels[net] + " -> ";
  for (size_t i = 0; i < ring.size(); ++i) out += (i ? " -> " : "") + labels[ring[i]];
  if (net >= 0) return out + " -> " + labels[net];
  return ring.empty() ? out : out + " -> " + labels[ring[0]];
}

std::string chain_text(const std::vector<int> &ring, const std::vector<std::string> &labels) {
  std::string out;
  for (size_t i = 0; i < ring.size(); ++i) out += (i ? " > " : "") + labels[ring[i]];
  return out;
}

std::string host_trees(int hosts) {
  const int shown = std::min(hosts, kMaxHostsShown);
  std::string out = strprintf(
      "trees across %d hosts (channel c runs tree c %% 2 between the hosts' chain heads; parent "
      "host, - for the root%s):\n",
      hosts, hosts > shown ? strprintf("; the first %d hosts", shown).c_str() : "");
  std::vector<Row> rows;
  Row header{"host"};
  for (int h = 0; h < shown; ++h) header.push_back(std::to_string(h));
  rows.push_back(header);
  for (int t = 0; t < 2; ++t) {
    std::vector<TreeNode> tree = binary_tree(hosts, t);
    Row row{strprintf("tree %d", t)};
    for (int h = 0; h < shown; ++h) {
      row.push_back(tree[h].parent >= 0 ? std::to_string(tree[h].parent) : "-");
    }
    row.push_back(strprintf("(depth %d)", tree_depth(tree)));
    rows.push_back(row);
  }
  return out + render_table(rows);
}

}  // namespace

std::vector<std::string> node_labels(const Topology &topo) {
  std::vector<std::string> labels;
  int gpus = 0, nics = 0;
  for (const Node &node : topo.nodes) {
    if (node.type == NodeType::kGpu) {
      labels.push_back(strprintf("GPU%d", gpus++));
    } else if (node.type == NodeType::kNic) {
      labels.push_back(strprintf("NIC%d", nics++));
    } else {
      labels.push_back(node.id);
    }
  }
  return labels;
}

int local_cpu(const Topology &topo, const Paths &paths, int node) {
  int best = -1;
  for (int cpu : topo.of_type(NodeType::kCpu)) {
    const Path &path = paths.get(node, cpu);
    if (path.type == PathType::kDis) continue;
    if (best < 0) {
      best = cpu;
      continue;
    }
    const Path &other = paths.get(node, best);
    if (std::make_tuple(path.type, -path.bw, path.hops) <
        std::make_tuple(other.type, -other.bw, other.hops)) {
      best = cpu;
    }
  }
  return best;
}

std::string describe_topology(const Topology &topo) {
  const std::vector<std::string> labels = node_labels(topo);
  std::string out = "host: " + (topo.host.empty() ? std::string("?") : topo.host) + "\n";
  out += node_counts(topo);
  out += cpu_section(topo, labels);
  out += gpu_section(topo, labels);
  out += nic_section(topo, labels);
  out += nvlink_section(topo, labels);
  if (!topo.no_p2p.empty()) {
    out += "no peer access (CUDA runtime):";
    for (const auto &[a, b] : topo.no_p2p) {
      int x = topo.find(NodeType::kGpu, a);
      int y = topo.find(NodeType::kGpu, b);
      out += strprintf(" %s-%s", x >= 0 ? labels[x].c_str() : a.c_str(),
                       y >= 0 ? labels[y].c_str() : b.c_str());
    }
    out += "\n";
  }
  if (topo.assumptions.empty()) return out + "no assumptions\n";
  for (const std::string &assumption : topo.assumptions) out += "assumed: " + assumption + "\n";
  return out;
}

std::string describe_matrix(const Topology &topo, const Paths &paths) {
  const std::vector<std::string> labels = node_labels(topo);
  const std::vector<int> gpus = topo.of_type(NodeType::kGpu);
  std::vector<int> devices = gpus;
  for (int nic : topo.of_type(NodeType::kNic)) devices.push_back(nic);
  if (devices.empty()) return "paths: no GPUs or NICs\n";
  std::string out = type_matrix(topo, paths, devices, labels);
  if (devices.size() == 1) return out;  // no pair: only its CPU and NUMA node to show
  out += bandwidth_matrix(paths, devices, labels);
  if (gpus.size() > 1) out += transport_matrix(topo, paths, gpus, labels);
  return out + legend();
}

std::string describe_graph(const Topology &topo, const NodeGraph &graph, int hosts) {
  if (graph.rings.empty()) {
    if (topo.of_type(NodeType::kGpu).empty()) {
      return "no GPUs: collectives run on host memory; rings follow rank order by NUMA node\n";
    }
    return "rings: none (no GPUs were searched)\n";
  }
  const std::vector<std::string> labels = node_labels(topo);
  const bool cross_node =
      std::any_of(graph.nets.begin(), graph.nets.end(), [](int net) { return net >= 0; });
  const size_t channels = graph.rings.size();
  std::string out = strprintf("rings: %zu channel%s x %.1f GB/s = %.1f GB/s; GPU-GPU hops %s",
                              channels, channels == 1 ? "" : "s", graph.bw, channels * graph.bw,
                              path_type_name(graph.intra_type));
  if (cross_node) out += strprintf(", GPU-NIC %s", path_type_name(graph.net_type));
  out += strprintf("; search: %ld hops weighed%s\n", graph.steps,
                   graph.fallback ? ", nothing fitted: fallback ring by bus id" : "");
  if (hosts > 1 && !cross_node) {
    out += strprintf("  no ring goes through a NIC (network ports: %zu)\n",
                     topo.of_type(NodeType::kNet).size());
  }
  for (size_t c = 0; c < channels; ++c) {
    out += strprintf("  ring %zu: %s\n", c, ring_text(graph, c, labels).c_str());
  }
  out += "trees within the host (each channel's ring order as a chain, head first):\n";
  for (size_t c = 0; c < channels; ++c) {
    out += strprintf("  chain %zu: %s\n", c, chain_text(graph.rings[c], labels).c_str());
  }
  if (hosts > 1) out += host_trees(hosts);
  return out;
}

}  // namespace cohort::topo
