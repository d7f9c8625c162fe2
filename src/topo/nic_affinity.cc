#include "topo/nic_affinity.h"

#include <algorithm>

namespace cohort::topo {
namespace {

// Better first: lower type, then wider.
bool better(const Path &a, const Path &b) {
  return a.type != b.type ? a.type < b.type : a.bw > b.bw;
}
bool same(const Path &a, const Path &b) { return a.type == b.type && a.bw == b.bw; }

std::vector<int> by_id(const Topology &topo, std::vector<int> nodes) {
  std::sort(nodes.begin(), nodes.end(),
            [&](int a, int b) { return topo.nodes[a].id < topo.nodes[b].id; });
  return nodes;
}

}  // namespace

std::vector<int> nearest_nics(const Topology &topo, const Paths &paths, int gpu) {
  if (gpu < 0 || gpu >= static_cast<int>(topo.nodes.size()) ||
      topo.nodes[gpu].type != NodeType::kGpu) {
    return {};
  }
  std::vector<int> best;
  for (int nic : topo.of_type(NodeType::kNic)) {
    const Path &p = paths.get(gpu, nic);
    if (p.type >= PathType::kNet) continue;  // not reachable within the host
    if (!best.empty() && better(paths.get(gpu, best.front()), p)) continue;
    if (!best.empty() && !same(paths.get(gpu, best.front()), p)) best.clear();
    best.push_back(nic);
  }
  return by_id(topo, std::move(best));
}

int nic_of_gpu(const Topology &topo, const Paths &paths, int gpu) {
  const std::vector<int> mine = nearest_nics(topo, paths, gpu);
  if (mine.empty()) return -1;
  size_t turn = 0;  // GPUs before this one (bus-id order) with the same nearest NICs
  for (int other : by_id(topo, topo.of_type(NodeType::kGpu))) {
    if (other == gpu) break;
    if (nearest_nics(topo, paths, other) == mine) ++turn;
  }
  return mine[turn % mine.size()];
}

}  // namespace cohort::topo
