#include "topo/paths.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "topo/bandwidth.h"

namespace cohort::topo {
namespace {

// What a partial path has gone through, enough to name its type.
struct Label {
  bool reached = false;
  bool nvlink_only = true;
  bool via_gpu = false;  // relayed by an intermediate GPU
  bool via_cpu = false;  // touched a CPU (as relay or end)
  bool cpu_link = false;
  int switches = 0;  // intermediate PCI switches
  double bw = 1e300;
  int hops = 0;
  PathType type = PathType::kLoc;
};

PathType type_of(const Label &l) {
  if (l.hops == 0) return PathType::kLoc;
  if (l.nvlink_only) return l.via_gpu ? PathType::kNvb : PathType::kNvl;
  if (l.cpu_link) return PathType::kSys;
  if (l.via_cpu) return PathType::kPhb;
  return l.switches <= 1 ? PathType::kPix : PathType::kPxb;
}

// Lower is better: type, then wider, then shorter.
bool better(const Label &a, const Label &b) {
  if (!b.reached) return true;
  return std::make_tuple(a.type, -a.bw, a.hops) < std::make_tuple(b.type, -b.bw, b.hops);
}

bool may_relay(const Topology &topo, int node, const Link *in, const Link &out) {
  switch (topo.nodes[node].type) {
    case NodeType::kPci:
    case NodeType::kCpu:
    case NodeType::kNvSwitch: return true;
    case NodeType::kGpu:
      return in != nullptr && in->type == LinkType::kNvLink && out.type == LinkType::kNvLink;
    case NodeType::kNic:  // between its own port and the PCI tree, never PCI to PCI
      return out.type == LinkType::kNet || (in != nullptr && in->type == LinkType::kNet);
    default: return false;
  }
}

Label extend(const Topology &topo, const Label &from, const Link &link, bool relay) {
  Label l = from;
  l.reached = true;
  l.hops += 1;
  l.bw = std::min(l.bw, link.bw);
  if (link.type != LinkType::kNvLink && link.type != LinkType::kNet) l.nvlink_only = false;
  if (link.type == LinkType::kCpu) l.cpu_link = true;
  const Node &mid = topo.nodes[link.from];
  if (relay && mid.type == NodeType::kGpu) l.via_gpu = true;
  if (relay && mid.type == NodeType::kPci) l.switches += 1;
  if (mid.type == NodeType::kCpu || topo.nodes[link.to].type == NodeType::kCpu) l.via_cpu = true;
  l.type = type_of(l);
  return l;
}

}  // namespace

PathType default_p2p_level(const std::string &vendor, const std::string &arch) {
  if (vendor == "intel" || arch == "aarch64") return PathType::kPxb;
  return PathType::kPhb;
}

const Path Paths::kNoPath;

namespace {

// Collectives start and end at these; PCI switches and the NVSwitch fabric only relay.
bool is_endpoint(NodeType type) {
  return type == NodeType::kGpu || type == NodeType::kCpu || type == NodeType::kNic ||
         type == NodeType::kNet;
}

// The GPU pairs without peer access, as sorted index pairs (lower first).
std::vector<std::pair<int, int>> no_p2p_pairs(const Topology &topo) {
  std::unordered_map<std::string, int> gpu_of_id;
  for (int g : topo.of_type(NodeType::kGpu)) gpu_of_id.emplace(topo.nodes[g].id, g);
  std::vector<std::pair<int, int>> pairs;
  for (const auto &[first, second] : topo.no_p2p) {
    auto a = gpu_of_id.find(first);
    auto b = gpu_of_id.find(second);
    if (a == gpu_of_id.end() || b == gpu_of_id.end()) continue;
    pairs.emplace_back(std::min(a->second, b->second), std::max(a->second, b->second));
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace

struct Paths::Search {
  std::vector<Label> labels;
  std::vector<bool> settled;
};

Paths::Paths(const Topology &topo, const PathOptions &options) {
  count_ = static_cast<int>(topo.nodes.size());
  row_.assign(count_, -1);
  int rows = 0;
  for (int node = 0; node < count_; ++node) {
    if (is_endpoint(topo.nodes[node].type)) row_[node] = rows++;
  }
  paths_.assign(static_cast<size_t>(rows) * count_, Path{});
  prev_.assign(static_cast<size_t>(rows) * count_, -1);
  for (const Link &link : topo.links) link_from_.push_back(link.from);
  p2p_level_ = options.p2p_level;
  if (p2p_level_ == PathType::kCount) {
    std::vector<int> cpus = topo.of_type(NodeType::kCpu);
    const Node *cpu = cpus.empty() ? nullptr : &topo.nodes[cpus[0]];
    p2p_level_ = cpu ? default_p2p_level(cpu->vendor, cpu->arch) : PathType::kPhb;
  }
  no_p2p_ = no_p2p_pairs(topo);
  Search search;
  for (int source = 0; source < count_; ++source) {
    if (is_source(source)) compute_from(topo, source, &search);
  }
}

// Label-setting search over (type, -bw, hops): extending a path never improves its key, so a
// node settles with the best type and width; see Paths() for what that leaves out.
void Paths::compute_from(const Topology &topo, int source, Search *search) {
  std::vector<Label> &labels = search->labels;
  std::vector<bool> &settled = search->settled;
  labels.assign(count_, Label{});
  settled.assign(count_, false);
  labels[source].reached = true;
  // Entries carry their key as pushed; a node pushed again with a better key is settled by
  // that entry, its older entries skipped.
  using Entry = std::tuple<PathType, double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  queue.push({PathType::kLoc, 0.0, 0, source});
  const size_t row = static_cast<size_t>(row_[source]) * count_;
  int *prev = &prev_[row];
  while (!queue.empty()) {
    int node = std::get<3>(queue.top());
    queue.pop();
    if (settled[node]) continue;
    settled[node] = true;
    const Link *in = prev[node] >= 0 ? &topo.links[prev[node]] : nullptr;
    for (int l : topo.nodes[node].links) {
      const Link &link = topo.links[l];
      if (settled[link.to]) continue;
      bool relay = node != source;
      if (relay && !may_relay(topo, node, in, link)) continue;
      Label next = extend(topo, labels[node], link, relay);
      if (!better(next, labels[link.to])) continue;
      labels[link.to] = next;
      prev[link.to] = l;
      queue.push({next.type, -next.bw, next.hops, link.to});
    }
  }
  for (int node = 0; node < count_; ++node) {
    if (!labels[node].reached) continue;
    Path &path = paths_[row + node];
    path.type = labels[node].type;
    path.bw = node == source ? kLocalBw : labels[node].bw;
    path.hops = labels[node].hops;
  }
}

std::vector<int> Paths::route(int from, int to) const {
  std::vector<int> links;
  for_each_link(from, to, [&](int l) { links.push_back(l); });
  std::reverse(links.begin(), links.end());
  return links;
}

Transport Paths::gpu_transport(int gpu_a, int gpu_b) const {
  if (gpu_a == gpu_b) return Transport::kP2p;
  const Path &path = get(gpu_a, gpu_b);
  if (path.type == PathType::kDis) return Transport::kShm;
  const std::pair<int, int> key{std::min(gpu_a, gpu_b), std::max(gpu_a, gpu_b)};
  if (std::binary_search(no_p2p_.begin(), no_p2p_.end(), key)) {
    return Transport::kShm;
  }
  return path.type <= p2p_level_ ? Transport::kP2p : Transport::kShm;
}

}  // namespace cohort::topo
