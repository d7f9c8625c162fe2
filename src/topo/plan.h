// The team's plan: the rings and trees every rank follows, built identically on every rank
// from each host's graph (its summary) and aligned across hosts, as NCCL does: the fewest
// channels and the lowest bandwidth of any host, the worst path type.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "topo/search.h"

namespace cohort::topo {

// What one host contributes: its ranks in ring order per channel, and its graph's figures.
struct NodeSummary {
  int channels = 0;
  double bw = 0;  // GB/s per channel; 0 for hosts whose ranks use no GPU
  PathType intra_type = PathType::kLoc;
  PathType net_type = PathType::kLoc;
  bool fallback = false;
  std::vector<std::vector<int>> order;  // per channel: the host's team ranks, ring order
};

// A rank of this host as the graph phase sees it.
struct LocalRank {
  int rank = 0;
  int gpu = -1;   // its GPU's node index in the topology; -1: none
  int numa = -1;  // where a rank without GPU runs
};

// Orders the host's ranks along each of the graph's rings; ranks sharing a GPU sit next to
// each other; ranks without a GPU follow by NUMA node (before the last GPU's ranks when the
// ring leaves the host, so the rank that sends to the next host is the one next to the port).  A
// host without GPUs in use gets two channels (one per tree) with its ranks by NUMA node.
NodeSummary summarize_node(const NodeGraph &graph, const std::vector<LocalRank> &ranks);

// Fixed-size record of a summary for the graphs-phase exchange: every rank sends one, sized
// for the largest host (`local_max` ranks).
size_t summary_words(int local_max);
void pack_summary(const NodeSummary &summary, int local_max, int32_t *words);
// Checks what it reads (counts, ranks within [0, team_size)); names the problem.
Status unpack_summary(const int32_t *words, int local_max, int team_size, NodeSummary *out);

struct TreeLinks {
  int up = -1;
  std::array<int, 3> down = {-1, -1, -1};  // next in the host's chain, then two other hosts
};

struct Plan {
  int channels = 0;
  double bw = 0;
  PathType intra_type = PathType::kLoc;
  PathType net_type = PathType::kLoc;
  int nodes = 0;
  std::vector<std::vector<int>> rings;        // per channel: every team rank, in ring order
  std::vector<std::vector<TreeLinks>> trees;  // per channel, per rank; channel c uses tree c % 2
  uint64_t hash = 0;                          // of everything above

  int ring_next(int channel, int rank) const;
  int ring_prev(int channel, int rank) const;
  std::vector<std::vector<int>> ring_position;  // per channel, per rank: index in rings
};

// Builds the plan from the summaries of every host, in host order (node index).  Within a
// host, a tree is the chain of the channel's ring order; across hosts, channel c's chain
// heads form binary tree c % 2 of the double binary tree, so across hosts an odd channel
// count doubles (half the bandwidth each; or drops one at the 32-channel limit).
Status align_plan(const std::vector<NodeSummary> &nodes, int team_size, Plan *out);

uint64_t plan_hash(const Plan &plan);

// The ranks `rank`'s rings and trees link it to, over every channel (sorted, without `rank`):
// the peers a transport connects to when the team is made; the others on first use.
std::vector<int> linked_ranks(const Plan &plan, int rank);

}  // namespace cohort::topo
