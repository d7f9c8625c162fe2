#include "team/node_layout.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/gpu_identity.h"

namespace cohort {

NodeLayout compute_node_layout(const std::vector<uint64_t> &host_ids) {
  NodeLayout layout;
  size_t n = host_ids.size();
  layout.node_of_rank.resize(n);
  layout.local_rank.resize(n);
  layout.local_size.resize(n);
  std::unordered_map<uint64_t, int> node_of_host;
  std::vector<int> ranks_on_node;
  for (size_t r = 0; r < n; ++r) {
    auto [it, inserted] = node_of_host.try_emplace(host_ids[r], layout.node_count);
    if (inserted) {
      ++layout.node_count;
      ranks_on_node.push_back(0);
    }
    layout.node_of_rank[r] = it->second;
    layout.local_rank[r] = ranks_on_node[it->second]++;
  }
  for (size_t r = 0; r < n; ++r) layout.local_size[r] = ranks_on_node[layout.node_of_rank[r]];
  return layout;
}

std::vector<std::vector<int>> find_shared_gpus(const std::vector<PeerRecord> &peers) {
  std::map<std::pair<uint64_t, std::string>, std::vector<int>> users;
  for (size_t r = 0; r < peers.size(); ++r) {
    if (peers[r].cuda_device < 0 || peers[r].bus_id[0] == '\0') continue;
    users[{peers[r].host_id, peers[r].bus_id}].push_back(static_cast<int>(r));
  }
  std::vector<std::vector<int>> groups;
  for (auto &[key, ranks] : users) {
    if (ranks.size() > 1) groups.push_back(ranks);
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

std::string describe_shared_gpus(const std::vector<PeerRecord> &peers,
                                 const std::vector<std::vector<int>> &groups, size_t max_groups) {
  std::string out;
  for (size_t g = 0; g < groups.size() && g < max_groups; ++g) {
    const std::vector<int> &ranks = groups[g];
    const PeerRecord &first = peers[ranks[0]];
    std::string who;
    for (size_t i = 0; i < ranks.size(); ++i) {
      who += (i == 0 ? "" : (i + 1 == ranks.size() ? " and " : ", ")) + std::to_string(ranks[i]);
    }
    out += strprintf("%sranks %s on host %s use the same GPU %s (%s):", g == 0 ? "" : "; ",
                     who.c_str(), first.host_label, first.bus_id, format_uuid(first.uuid).c_str());
    for (int r : ranks) {
      out += strprintf(" rank %d: CUDA device %d, CUDA_VISIBLE_DEVICES=%s;", r,
                       peers[r].cuda_device, peers[r].cuda_visible_devices);
    }
  }
  if (groups.size() > max_groups) {
    out += strprintf(" (and %zu more GPUs shared)", groups.size() - max_groups);
  }
  out +=
      " Fix: give each local rank its own GPU (cudaSetDevice(local_rank) before creating the "
      "team, or a per-rank CUDA_VISIBLE_DEVICES), or, to share GPUs under MPS on purpose, set "
      "COHORT_ALLOW_SHARED_GPU=1 (config.allow_shared_gpu=1).";
  return out;
}

}  // namespace cohort
