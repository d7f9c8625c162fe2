// Plans: host summaries, their exchange format, alignment across hosts, the trees that join
// hosts, and the cost of planning for a very large job.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "topo/bandwidth.h"
#include "topo/plan.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

NodeSummary host_summary(int first_rank, int ranks, int channels, double bw, PathType intra) {
  NodeSummary s;
  s.channels = channels;
  s.bw = bw;
  s.intra_type = intra;
  s.order.assign(channels, {});
  for (int c = 0; c < channels; ++c) {
    for (int i = 0; i < ranks; ++i) s.order[c].push_back(first_rank + (i + c) % ranks);
  }
  return s;
}

// Each host's summary from one searched graph of the reference host: rank host * G + i runs
// on GPU i of G.
std::vector<NodeSummary> job_of(int hosts, const NodeGraph &graph, const Topology &topo) {
  std::vector<int> gpus = all_gpus(topo);
  const int per_host = static_cast<int>(gpus.size());
  std::vector<NodeSummary> nodes;
  nodes.reserve(hosts);
  for (int h = 0; h < hosts; ++h) {
    std::vector<LocalRank> locals;
    for (int i = 0; i < per_host; ++i) locals.push_back({h * per_host + i, gpus[i], 0});
    nodes.push_back(summarize_node(graph, locals));
  }
  return nodes;
}

NodeGraph cross_node_graph(const Topology &topo, const Paths &paths) {
  SearchOptions options;
  options.cross_node = true;
  return search_rings(topo, paths, all_gpus(topo), options);
}

void expect_consistent(const Plan &plan, int team_size) {
  for (int c = 0; c < plan.channels; ++c) {
    std::vector<int> sorted = plan.rings[c];
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < team_size; ++r) ASSERT_EQ(sorted[r], r);
    for (int r = 0; r < team_size; ++r) {
      ASSERT_EQ(plan.ring_prev(c, plan.ring_next(c, r)), r);
    }
    int roots = 0;
    for (int r = 0; r < team_size; ++r) {
      const TreeLinks &t = plan.trees[c][r];
      for (int child : t.down) {
        if (child >= 0) {
          ASSERT_EQ(plan.trees[c][child].up, r) << "child " << child << " of " << r;
        }
      }
      if (t.up < 0) {
        ++roots;
        continue;
      }
      const TreeLinks &up = plan.trees[c][t.up];
      ASSERT_TRUE(std::count(up.down.begin(), up.down.end(), r) == 1) << "rank " << r;
      int steps = 0;  // every rank reaches the root: no cycles
      for (int at = r; plan.trees[c][at].up >= 0 && steps <= team_size; at = plan.trees[c][at].up) {
        ++steps;
      }
      ASSERT_LE(steps, team_size) << "rank " << r << " never reaches the root";
    }
    ASSERT_EQ(roots, 1) << "channel " << c;
  }
}

}  // namespace

TEST(TopoPlan, SummaryPutsSharedGpuRanksTogetherAndGpulessRanksLast) {
  NodeGraph graph;
  graph.rings = {{5, 7}, {7, 5}};
  graph.nets = {-1, -1};
  graph.bw = 20;
  std::vector<LocalRank> locals = {{10, 7, 0}, {11, -1, 1}, {12, 5, 0}, {13, 7, 0}, {14, -1, 0}};
  NodeSummary s = summarize_node(graph, locals);
  ASSERT_EQ(s.channels, 2);
  EXPECT_EQ(s.order[0], (std::vector<int>{12, 10, 13, 14, 11}));
  EXPECT_EQ(s.order[1], (std::vector<int>{10, 13, 12, 14, 11}));
  // A ring that leaves the host ends at the GPU next to its port: ranks without a GPU go before
  // that GPU's ranks, not after them.
  graph.nets = {3, -1};
  s = summarize_node(graph, locals);
  EXPECT_EQ(s.order[0], (std::vector<int>{12, 14, 11, 10, 13}));
  EXPECT_EQ(s.order[1], (std::vector<int>{10, 13, 12, 14, 11}));
  // No GPU in use: two channels in NUMA order.
  NodeSummary host = summarize_node(NodeGraph{}, {{3, -1, 1}, {4, -1, 0}});
  EXPECT_EQ(host.channels, 2);
  EXPECT_EQ(host.bw, 0);
  EXPECT_EQ(host.order[1], (std::vector<int>{4, 3}));
}

TEST(TopoPlan, SummaryRecordsRoundTripAndRejectNonsense) {
  NodeSummary s = host_summary(4, 3, 5, 24.5, PathType::kPxb);
  s.net_type = PathType::kPix;
  s.fallback = true;
  std::vector<int32_t> words(summary_words(4));
  pack_summary(s, 4, words.data());
  NodeSummary back;
  ASSERT_EQ(unpack_summary(words.data(), 4, 8, &back), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(back.channels, 5);
  EXPECT_EQ(back.bw, 24.5);
  EXPECT_EQ(back.intra_type, PathType::kPxb);
  EXPECT_EQ(back.net_type, PathType::kPix);
  EXPECT_TRUE(back.fallback);
  EXPECT_EQ(back.order, s.order);
  // A rank outside the team, a bad count, a foreign record.
  EXPECT_NE(unpack_summary(words.data(), 4, 6, &back), COHORT_SUCCESS);
  std::vector<int32_t> bad = words;
  bad[1] = kMaxChannels + 1;
  EXPECT_NE(unpack_summary(bad.data(), 4, 8, &back), COHORT_SUCCESS);
  bad = words;
  bad[0] = 0;
  EXPECT_NE(unpack_summary(bad.data(), 4, 8, &back), COHORT_SUCCESS);
}

TEST(TopoPlan, AlignTakesMinChannelsAndBandwidthAndMaxPathType) {
  std::vector<NodeSummary> nodes = {host_summary(0, 4, 6, 40, PathType::kNvl),
                                    host_summary(4, 3, 4, 50, PathType::kPix),
                                    host_summary(7, 2, 8, 30, PathType::kNvl)};
  nodes[1].net_type = PathType::kPxb;
  nodes[2].net_type = PathType::kPix;
  Plan plan;
  ASSERT_EQ(align_plan(nodes, 9, &plan), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(plan.channels, 4);
  EXPECT_EQ(plan.bw, 30);
  EXPECT_EQ(plan.intra_type, PathType::kPix);
  EXPECT_EQ(plan.net_type, PathType::kPxb);
  EXPECT_EQ(plan.channels % 2, 0) << "both trees carry equal shares";
  expect_consistent(plan, 9);
  // Rings follow hosts in order, each host's channel order inside.
  EXPECT_EQ(plan.rings[1], (std::vector<int>{1, 2, 3, 0, 5, 6, 4, 8, 7}));
  // An odd count across hosts doubles, at half the bandwidth, so both trees are used evenly.
  std::vector<NodeSummary> odd = {host_summary(0, 2, 3, 40, PathType::kNvl),
                                  host_summary(2, 2, 5, 40, PathType::kNvl)};
  Plan doubled;
  ASSERT_EQ(align_plan(odd, 4, &doubled), COHORT_SUCCESS);
  EXPECT_EQ(doubled.channels, 6);
  EXPECT_EQ(doubled.bw, 20);
  EXPECT_EQ(doubled.rings[4], doubled.rings[1]);
  expect_consistent(doubled, 4);
  Plan one_host;  // within one host the trees are chains: no doubling
  ASSERT_EQ(align_plan({odd[0]}, 2, &one_host), COHORT_SUCCESS);
  EXPECT_EQ(one_host.channels, 3);
  // A host without GPUs (bw 0) does not zero the plan's bandwidth.
  nodes.push_back(summarize_node(NodeGraph{}, {{9, -1, 0}}));
  ASSERT_EQ(align_plan(nodes, 10, &plan), COHORT_SUCCESS);
  EXPECT_EQ(plan.bw, 30);
  EXPECT_EQ(plan.channels, 2);
  // The same inputs give the same hash; another order of one host does not.
  Plan again;
  ASSERT_EQ(align_plan(nodes, 10, &again), COHORT_SUCCESS);
  EXPECT_EQ(plan.hash, again.hash);
  std::swap(nodes[0].order[0][0], nodes[0].order[0][1]);
  ASSERT_EQ(align_plan(nodes, 10, &again), COHORT_SUCCESS);
  EXPECT_NE(plan.hash, again.hash);
  // Summaries that do not cover the team are refused.
  EXPECT_NE(align_plan(nodes, 11, &again), COHORT_SUCCESS);
}

TEST(TopoPlan, SixteenH100HostsJoinByTwoComplementaryTrees) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  Paths paths(topo);
  NodeGraph graph = cross_node_graph(topo, paths);
  for (int hosts : {2, 16}) {
    std::vector<NodeSummary> nodes = job_of(hosts, graph, topo);
    Plan plan;
    ASSERT_EQ(align_plan(nodes, hosts * 8, &plan), COHORT_SUCCESS) << last_error();
    ASSERT_GE(plan.channels, 2);
    expect_consistent(plan, hosts * 8);
    // Host-level trees: the chain heads of channels 0 and 1.
    int depth_bound = 0;
    while ((1 << depth_bound) < hosts) ++depth_bound;
    for (int h = 0; h < hosts; ++h) {
      int interior = 0;
      for (int c = 0; c < 2; ++c) {
        const TreeLinks &head = plan.trees[c][nodes[h].order[c][0]];
        interior += head.down[1] >= 0 || head.down[2] >= 0;
        // Host depth: hops up between heads of different hosts.
        int depth = 0;
        for (int at = nodes[h].order[c][0]; plan.trees[c][at].up >= 0; at = plan.trees[c][at].up) {
          depth += plan.trees[c][at].up / 8 != at / 8;
        }
        EXPECT_LE(depth, depth_bound + 1) << hosts << " hosts, host " << h;
      }
      EXPECT_LE(interior, 1) << "host " << h << " of " << hosts;
    }
    // Rings cross hosts once per host per channel.
    for (int c = 0; c < plan.channels; ++c) {
      int crossings = 0;
      for (int r = 0; r < hosts * 8; ++r) crossings += plan.ring_next(c, r) / 8 != r / 8;
      EXPECT_EQ(crossings, hosts);
    }
  }
}

// Two DGX-1-class hosts: within a host every ring hop is an NVLink of its own (no NVB hop
// through a third GPU), and each ring leaves a host from, and enters the next at, a GPU on the
// PCIe switch of the channel's NIC.
TEST(TopoPlan, CubeMeshHostsHopOverDirectNvlinksAndCrossAtTheirNic) {
  Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  Paths paths(topo);
  NodeGraph graph = cross_node_graph(topo, paths);
  ASSERT_FALSE(graph.rings.empty());
  const std::vector<int> gpus = all_gpus(topo);
  const int hosts = 2;
  const int ranks = hosts * static_cast<int>(gpus.size());
  std::vector<NodeSummary> nodes = job_of(hosts, graph, topo);
  Plan plan;
  ASSERT_EQ(align_plan(nodes, ranks, &plan), COHORT_SUCCESS) << last_error();
  expect_consistent(plan, ranks);
  auto gpu_of = [&](int rank) { return gpus[rank % gpus.size()]; };
  auto host_of = [&](int rank) { return rank / static_cast<int>(gpus.size()); };
  for (int c = 0; c < plan.channels; ++c) {
    const int net = graph.nets[c % graph.rings.size()];
    ASSERT_GE(net, 0);
    int crossings = 0;
    for (int r = 0; r < ranks; ++r) {
      const int next = plan.ring_next(c, r);
      const int from = gpu_of(r);
      const int to = gpu_of(next);
      if (host_of(next) == host_of(r)) {
        EXPECT_TRUE(direct_nvlink(topo, from, to))
            << "channel " << c << ", rank " << r << ": " << hop_text(topo, paths, from, to);
        continue;
      }
      ++crossings;
      EXPECT_EQ(paths.get(from, net).type, PathType::kPix)
          << "channel " << c << " leaves host " << host_of(r) << " from " << topo.nodes[from].id;
      EXPECT_EQ(paths.get(net, to).type, PathType::kPix)
          << "channel " << c << " enters host " << host_of(next) << " at " << topo.nodes[to].id;
    }
    EXPECT_EQ(crossings, hosts);
  }
  EXPECT_EQ(plan.intra_type, PathType::kNvl);
  EXPECT_EQ(plan.net_type, PathType::kPix);
  // Every 100 Gb/s port carries a channel each way.
  EXPECT_DOUBLE_EQ(plan.channels * plan.bw, 4 * nic_bw(100));
}

// NCCL once spent 26 s in an O(n^2) loop at 96k ranks: planning 16384 hosts x 8 GPUs (one
// search per host shape, then alignment of every host) must stay well under a second.
TEST(TopoPlan, SimulatedJobOf16384HostsPlansInUnderASecond) {
  Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  Paths paths(topo);
  const int hosts = 16384;
  auto start = std::chrono::steady_clock::now();
  NodeGraph graph = cross_node_graph(topo, paths);
  std::vector<NodeSummary> nodes = job_of(hosts, graph, topo);
  Plan plan;
  ASSERT_EQ(align_plan(nodes, hosts * 8, &plan), COHORT_SUCCESS) << last_error();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("plan_seconds", std::to_string(seconds));
  std::printf("planned %d ranks, %d channels, in %.3f s\n", hosts * 8, plan.channels, seconds);
#if defined(__SANITIZE_ADDRESS__)
  const double limit = 5.0;  // sanitizers slow everything several-fold
#else
  const double limit = 1.0;
#endif
  EXPECT_LT(seconds, limit);
  EXPECT_EQ(static_cast<int>(plan.rings[0].size()), hosts * 8);
  EXPECT_EQ(plan.ring_next(0, plan.rings[0].back()), plan.rings[0].front());
}

}  // namespace cohort::topo
