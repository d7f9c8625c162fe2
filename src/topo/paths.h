// Paths from the nodes that collectives start and end at (GPUs, CPUs, NICs, network ports) to
// every node of one host's topology: type (LOC ... SYS), bottleneck bandwidth, hop count and
// the links they use, and the transport a GPU pair would take.
#pragma once

#include <utility>
#include <vector>

#include "topo/topo.h"

namespace cohort::topo {

struct Path {
  double bw = 0;                   // GB/s: the narrowest link on the path
  int hops = 0;                    // links on the path
  PathType type = PathType::kDis;  // last: 16 bytes a path, the table is sources x nodes
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
  // A path from every source (a GPU, CPU, NIC or network port) to every node, chosen by
  // lowest type first (so NVLink beats PCIe and a PCIe switch beats the CPU), then the widest,
  // then the shortest, with one label per node: the type and width are the best there are,
  // the hop count only a tie-break among the labels the search met first (a longer route of
  // equal type and width can win).  GPUs relay only NVLink to NVLink (NVB); a NIC only between
  // its port and the PCI tree.  One search per source: O(sources x links x log nodes) time,
  // sources x nodes memory, where an all-pairs table would be nodes^2.
  Paths(const Topology &topo, const PathOptions &options = {});

  // Whether paths leave `node`: GPUs, CPUs, NICs and network ports; switches only relay.
  bool is_source(int node) const { return row_[node] >= 0; }
  // The path from -> to; none (kDis) when `from` is not a source.
  const Path &get(int from, int to) const {
    const int row = row_[from];
    return row < 0 ? kNoPath : paths_[static_cast<size_t>(row) * count_ + to];
  }
  // The links of the path from -> to, in order (empty for from == to or no path).
  std::vector<int> route(int from, int to) const;
  // Calls visit(link) for each link of the path from -> to, the last first, allocating nothing
  // (the ring search asks this for every hop it weighs).
  template <typename Visit>
  void for_each_link(int from, int to, Visit visit) const {
    const int row = row_[from];
    if (row < 0) return;
    const int *prev = &prev_[static_cast<size_t>(row) * count_];
    for (int node = to; node != from && prev[node] >= 0; node = link_from_[prev[node]]) {
      visit(prev[node]);
    }
  }
  // P2P when the path is at most the P2P level and CUDA allows peer access; else SHM.
  Transport gpu_transport(int gpu_a, int gpu_b) const;
  PathType p2p_level() const { return p2p_level_; }

 private:
  struct Search;  // one source's search state, reused across sources
  void compute_from(const Topology &topo, int source, Search *search);

  static const Path kNoPath;
  int count_ = 0;
  std::vector<int> row_;     // per node: its row of paths_ and prev_; -1 not a source
  std::vector<Path> paths_;  // sources x count_
  std::vector<int> prev_;    // the last link of the best path source -> node
  std::vector<int> link_from_;
  std::vector<std::pair<int, int>> no_p2p_;  // GPU index pairs (lower first), sorted
  PathType p2p_level_ = PathType::kPhb;
};

// The default P2P level for a host whose CPUs are from `vendor` on `arch`.
PathType default_p2p_level(const std::string &vendor, const std::string &arch);

}  // namespace cohort::topo
