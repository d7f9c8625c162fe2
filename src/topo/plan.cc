#include "topo/plan.h"

#include <algorithm>
#include <cstring>

#include "core/hash.h"
#include "topo/trees.h"

namespace cohort::topo {
namespace {

constexpr int kHostChannels = 2;
constexpr int32_t kSummaryMagic = 0x5c0e77a;
// Header words: magic, channels, local count, intra type, net type, fallback, bw (2 words).
constexpr size_t kHeaderWords = 8;

}  // namespace

NodeSummary summarize_node(const NodeGraph &graph, const std::vector<LocalRank> &ranks) {
  NodeSummary summary;
  std::vector<LocalRank> without_gpu;
  for (const LocalRank &r : ranks) {
    if (r.gpu < 0) without_gpu.push_back(r);
  }
  std::stable_sort(without_gpu.begin(), without_gpu.end(),
                   [](const LocalRank &a, const LocalRank &b) { return a.numa < b.numa; });
  summary.channels = graph.rings.empty() ? kHostChannels : static_cast<int>(graph.rings.size());
  summary.bw = graph.rings.empty() ? 0 : graph.bw;
  summary.intra_type = graph.intra_type;
  summary.net_type = graph.net_type;
  summary.fallback = graph.fallback;
  summary.order.resize(summary.channels);
  for (int c = 0; c < summary.channels; ++c) {
    std::vector<int> &order = summary.order[c];
    size_t exit_start = 0;  // where the ranks of the ring's last GPU begin
    if (!graph.rings.empty()) {
      for (int gpu : graph.rings[c]) {
        exit_start = order.size();
        for (const LocalRank &r : ranks) {
          if (r.gpu == gpu) order.push_back(r.rank);
        }
      }
    }
    // The host's last rank sends to the next host: keep it the GPU next to the ring's port.
    bool leaves = c < static_cast<int>(graph.nets.size()) && graph.nets[c] >= 0;
    size_t at = leaves ? exit_start : order.size();
    for (const LocalRank &r : without_gpu) order.insert(order.begin() + at++, r.rank);
  }
  return summary;
}

size_t summary_words(int local_max) {
  return kHeaderWords + static_cast<size_t>(kMaxChannels) * std::max(local_max, 1);
}

void pack_summary(const NodeSummary &summary, int local_max, int32_t *words) {
  std::fill(words, words + summary_words(local_max), -1);
  int local = summary.order.empty() ? 0 : static_cast<int>(summary.order[0].size());
  words[0] = kSummaryMagic;
  words[1] = summary.channels;
  words[2] = local;
  words[3] = static_cast<int32_t>(summary.intra_type);
  words[4] = static_cast<int32_t>(summary.net_type);
  words[5] = summary.fallback ? 1 : 0;
  std::memcpy(&words[6], &summary.bw, sizeof(double));
  for (int c = 0; c < summary.channels && c < kMaxChannels; ++c) {
    for (int i = 0; i < local && i < local_max; ++i) {
      words[kHeaderWords + static_cast<size_t>(c) * local_max + i] = summary.order[c][i];
    }
  }
}

Status unpack_summary(const int32_t *words, int local_max, int team_size, NodeSummary *out) {
  NodeSummary summary;
  if (words[0] != kSummaryMagic) {
    return failf(COHORT_ERR_INTERNAL, "graph summary: bad magic 0x%x", words[0]);
  }
  summary.channels = words[1];
  int local = words[2];
  if (summary.channels < 1 || summary.channels > kMaxChannels || local < 1 || local > local_max) {
    return failf(COHORT_ERR_INTERNAL, "graph summary: %d channels of %d ranks (at most %d of %d)",
                 summary.channels, local, kMaxChannels, local_max);
  }
  if (words[3] < 0 || words[3] >= static_cast<int>(PathType::kCount) || words[4] < 0 ||
      words[4] >= static_cast<int>(PathType::kCount)) {
    return failf(COHORT_ERR_INTERNAL, "graph summary: path types %d/%d out of range", words[3],
                 words[4]);
  }
  summary.intra_type = static_cast<PathType>(words[3]);
  summary.net_type = static_cast<PathType>(words[4]);
  summary.fallback = words[5] != 0;
  std::memcpy(&summary.bw, &words[6], sizeof(double));
  summary.order.assign(summary.channels, std::vector<int>(local));
  for (int c = 0; c < summary.channels; ++c) {
    for (int i = 0; i < local; ++i) {
      int rank = words[kHeaderWords + static_cast<size_t>(c) * local_max + i];
      if (rank < 0 || rank >= team_size) {
        return failf(COHORT_ERR_INTERNAL, "graph summary: channel %d names rank %d of %d", c, rank,
                     team_size);
      }
      summary.order[c][i] = rank;
    }
  }
  *out = std::move(summary);
  return COHORT_SUCCESS;
}

std::vector<int> linked_ranks(const Plan &plan, int rank) {
  std::vector<int> out;
  for (int c = 0; c < static_cast<int>(plan.rings.size()); ++c) {
    if (plan.rings[c].size() < 2) continue;
    out.push_back(plan.ring_next(c, rank));
    out.push_back(plan.ring_prev(c, rank));
  }
  for (const std::vector<TreeLinks> &tree : plan.trees) {
    if (rank >= static_cast<int>(tree.size())) continue;
    out.push_back(tree[rank].up);
    out.insert(out.end(), tree[rank].down.begin(), tree[rank].down.end());
  }
  std::erase_if(out, [rank](int r) { return r < 0 || r == rank; });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int Plan::ring_next(int channel, int rank) const {
  const std::vector<int> &ring = rings[channel];
  return ring[(ring_position[channel][rank] + 1) % ring.size()];
}

int Plan::ring_prev(int channel, int rank) const {
  const std::vector<int> &ring = rings[channel];
  return ring[(ring_position[channel][rank] + ring.size() - 1) % ring.size()];
}

namespace {

// Host channel whose ring order plan channel c follows (channels doubled for the trees).
int source_channel(int c, int host_channels) { return c % host_channels; }

void build_trees(const std::vector<NodeSummary> &nodes, int team_size, int host_channels,
                 Plan *plan) {
  const int n = static_cast<int>(nodes.size());
  std::vector<TreeNode> node_trees[2] = {binary_tree(n, 0), binary_tree(n, 1)};
  plan->trees.assign(plan->channels, std::vector<TreeLinks>(team_size));
  for (int c = 0; c < plan->channels; ++c) {
    const std::vector<TreeNode> &tree = node_trees[c % 2];
    std::vector<TreeLinks> &links = plan->trees[c];
    for (int h = 0; h < n; ++h) {
      const int src = source_channel(c, host_channels);
      const std::vector<int> &chain = nodes[h].order[src];
      for (size_t i = 0; i < chain.size(); ++i) {
        TreeLinks &at = links[chain[i]];
        if (i > 0) at.up = chain[i - 1];
        if (i + 1 < chain.size()) at.down[0] = chain[i + 1];
      }
      TreeLinks &head = links[chain[0]];
      if (tree[h].parent >= 0) head.up = nodes[tree[h].parent].order[src][0];
      for (int k = 0; k < 2; ++k) {
        if (tree[h].child[k] >= 0) head.down[1 + k] = nodes[tree[h].child[k]].order[src][0];
      }
    }
  }
}

}  // namespace

Status align_plan(const std::vector<NodeSummary> &nodes, int team_size, Plan *out) {
  if (nodes.empty()) return fail(COHORT_ERR_INTERNAL, "align: no hosts");
  Plan plan;
  plan.nodes = static_cast<int>(nodes.size());
  plan.channels = kMaxChannels;
  bool any_gpu_bw = false;
  for (const NodeSummary &node : nodes) {
    plan.channels = std::min(plan.channels, node.channels);
    if (node.bw > 0) plan.bw = any_gpu_bw ? std::min(plan.bw, node.bw) : node.bw;
    any_gpu_bw |= node.bw > 0;
    plan.intra_type = std::max(plan.intra_type, node.intra_type);
    plan.net_type = std::max(plan.net_type, node.net_type);
  }
  // Channel c follows tree c % 2: across hosts an odd count would leave one tree idle or
  // unevenly loaded, so it doubles (each channel at half the bandwidth) or, at the limit,
  // drops one.
  const int host_channels = plan.channels;
  if (nodes.size() > 1 && plan.channels % 2 == 1) {
    if (2 * plan.channels <= kMaxChannels) {
      plan.channels *= 2;
      plan.bw /= 2;
    } else {
      plan.channels -= 1;
    }
  }
  plan.rings.assign(plan.channels, {});
  plan.ring_position.assign(plan.channels, std::vector<int>(team_size, -1));
  for (int c = 0; c < plan.channels; ++c) {
    std::vector<int> &ring = plan.rings[c];
    ring.reserve(team_size);
    const int src = source_channel(c, host_channels);
    for (const NodeSummary &node : nodes) {
      ring.insert(ring.end(), node.order[src].begin(), node.order[src].end());
    }
    if (static_cast<int>(ring.size()) != team_size) {
      return failf(COHORT_ERR_INTERNAL, "align: channel %d ring has %zu ranks, the team %d", c,
                   ring.size(), team_size);
    }
    for (int i = 0; i < team_size; ++i) {
      if (plan.ring_position[c][ring[i]] >= 0) {
        return failf(COHORT_ERR_INTERNAL, "align: rank %d appears twice in channel %d", ring[i], c);
      }
      plan.ring_position[c][ring[i]] = i;
    }
  }
  build_trees(nodes, team_size, host_channels, &plan);
  plan.hash = plan_hash(plan);
  *out = std::move(plan);
  return COHORT_SUCCESS;
}

uint64_t plan_hash(const Plan &plan) {
  int32_t head[4] = {plan.channels, plan.nodes, static_cast<int32_t>(plan.intra_type),
                     static_cast<int32_t>(plan.net_type)};
  uint64_t h = fnv1a(head, sizeof(head));
  h = fnv1a(&plan.bw, sizeof(plan.bw), h);
  for (const std::vector<int> &ring : plan.rings)
    h = fnv1a(ring.data(), ring.size() * sizeof(int), h);
  for (const std::vector<TreeLinks> &tree : plan.trees) {
    h = fnv1a(tree.data(), tree.size() * sizeof(TreeLinks), h);
  }
  return h;
}

}  // namespace cohort::topo
