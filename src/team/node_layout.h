// Node index, local rank and local size from host ids, and the duplicate-GPU check: pure
// functions over the gathered peer records, so every rank computes the same answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "team/peer.h"

namespace cohort {

struct NodeLayout {
  int node_count = 0;
  std::vector<int> node_of_rank;  // nodes numbered in order of their lowest rank
  std::vector<int> local_rank;    // order among the ranks of its node
  std::vector<int> local_size;    // ranks on the node of each rank
};

NodeLayout compute_node_layout(const std::vector<uint64_t> &host_ids);

// Ranks that share one GPU (same host, same PCI bus id), each group in rank order.
std::vector<std::vector<int>> find_shared_gpus(const std::vector<PeerRecord> &peers);

// The user-facing error for shared GPUs: both ranks, host, bus id, CUDA_VISIBLE_DEVICES and
// the fix.  Lists at most `max_groups` groups.
std::string describe_shared_gpus(const std::vector<PeerRecord> &peers,
                                 const std::vector<std::vector<int>> &groups,
                                 size_t max_groups = 4);

}  // namespace cohort
