// Graph search on one host: rings through the GPUs in use that maximise channels x
// per-channel bandwidth, subtracting each channel's bandwidth from the links it crosses, so
// NVLink-rich machines get many channels and PCIe machines cross the CPU interconnect as
// little as they can; at equal bandwidth, the rings with the fewest indirect hops (hops whose
// route is more than one link).  Bounded in work: a budget of hop evaluations, then a
// deterministic fallback ring.
#pragma once

#include <vector>

#include "topo/paths.h"
#include "topo/topo.h"

namespace cohort::topo {

constexpr int kMaxChannels = 32;
// Hop evaluations (a candidate next GPU's route weighed against the bandwidth left), ~20 ns
// each: a ring through G GPUs weighs ~G^2/2 hops, 33k for 256 GPUs, so this finds rings for the
// largest host allowed (rules.h) and bounds any search to a fraction of a second.
constexpr long kDefaultSearchBudget = 2000000;

struct SearchOptions {
  int max_channels = kMaxChannels;
  // Rings enter and leave the host through a NIC (jobs of several hosts): each channel picks
  // a network port, enters at a GPU close to it and leaves from another close GPU.
  bool cross_node = false;
  long budget =
      kDefaultSearchBudget;  // hop evaluations over the whole search (COHORT_SEARCH_BUDGET)
};

struct NodeGraph {
  std::vector<std::vector<int>> rings;   // per channel: GPU node indices, entry GPU first
  std::vector<int> nets;                 // per channel: the net node used, -1 within a host
  double bw = 0;                         // GB/s per channel
  PathType intra_type = PathType::kLoc;  // worst GPU-to-GPU hop on the rings
  PathType net_type = PathType::kLoc;    // worst GPU-to-NIC path (cross-node rings)
  bool fallback = false;                 // nothing found within the budget
  long steps = 0;                        // work spent: hop evaluations, the budget's unit
};

// Searches rings through `gpus` (GPU node indices of `topo`, no repeats).  A single GPU
// within a host (ranks sharing it) gets two channels at its memory bandwidth; no GPUs, an
// empty graph.
NodeGraph search_rings(const Topology &topo, const Paths &paths, const std::vector<int> &gpus,
                       const SearchOptions &options);

// Recomputes bw, intra_type and net_type of a given graph (a loaded one) from the topology.
void measure_graph(const Topology &topo, const Paths &paths, NodeGraph *graph);

}  // namespace cohort::topo
