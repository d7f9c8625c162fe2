// Paths between every pair of nodes of one host's topology: type (LOC ... SYS), bottleneck
// bandwidth, hop count and the links they use, and the transport a GPU pair would take.
#pragma once

#include <vector>

#include "topo/topo.h"

namespace cohort::topo {

struct Path {
  PathType type = PathType::kDis;
  double bw = 0;  // GB/s: the narrowest link on the path
  int hops = 0;   // links on the path
};

struct PathOptions {
  // The worst path type on which GPUs may use P2P (CUDA IPC); kCount: by CPU vendor (PXB on
  // Intel and ARM, where P2P through the root complex is slow, PHB elsewhere), so P2P never
  // crosses the CPU interconnect unless asked for.
  PathType p2p_level = PathType::kCount;
};

class Paths {
 public:
  Paths() = default;
  // A path from every node to every node, chosen by lowest type first (so NVLink beats PCIe
  // and a PCIe switch beats the CPU), then the widest, then the shortest, with one label per
  // node: the type and width are the best there are, the hop count only a tie-break among
  // the labels the search met first (a longer route of equal type and width can win).  GPUs
  // relay only NVLink to NVLink (NVB); a NIC only between its port and the PCI tree.
  Paths(const Topology &topo, const PathOptions &options = {});

  const Path &get(int from, int to) const { return paths_[from * count_ + to]; }
  // The links of the path from -> to, in order (empty for from == to or no path).
  std::vector<int> route(int from, int to) const;
  // P2P when the path is at most the P2P level and CUDA allows peer access; else SHM.
  Transport gpu_transport(int gpu_a, int gpu_b) const;
  PathType p2p_level() const { return p2p_level_; }

 private:
  void compute_from(const Topology &topo, int source);

  int count_ = 0;
  std::vector<Path> paths_;  // count_ x count_
  std::vector<int> prev_;    // the last link of the best path source -> node
  std::vector<int> link_from_;
  std::vector<std::pair<int, int>> no_p2p_;
  PathType p2p_level_ = PathType::kPhb;
};

// The default P2P level for a host whose CPUs are from `vendor` on `arch`.
PathType default_p2p_level(const std::string &vendor, const std::string &arch);

}  // namespace cohort::topo
