// Unit tests for node layout, host ids and the duplicate-GPU check (src/team/node_layout.*,
// src/team/peer.*).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/gpu_identity.h"
#include "team/node_layout.h"
#include "team/peer.h"

namespace cohort {
namespace {

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// Straightforward O(n^2) recomputation of the layout: nodes by first appearance.
NodeLayout reference_layout(const std::vector<uint64_t> &ids) {
  NodeLayout layout;
  std::vector<uint64_t> nodes;
  for (size_t r = 0; r < ids.size(); ++r) {
    int node = -1;
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (nodes[n] == ids[r]) node = static_cast<int>(n);
    }
    if (node < 0) {
      node = static_cast<int>(nodes.size());
      nodes.push_back(ids[r]);
    }
    int before = 0, total = 0;
    for (size_t q = 0; q < ids.size(); ++q) {
      if (ids[q] != ids[r]) continue;
      ++total;
      if (q < r) ++before;
    }
    layout.node_of_rank.push_back(node);
    layout.local_rank.push_back(before);
    layout.local_size.push_back(total);
  }
  layout.node_count = static_cast<int>(nodes.size());
  return layout;
}

void expect_same_layout(const NodeLayout &got, const NodeLayout &want) {
  EXPECT_EQ(got.node_count, want.node_count);
  EXPECT_EQ(got.node_of_rank, want.node_of_rank);
  EXPECT_EQ(got.local_rank, want.local_rank);
  EXPECT_EQ(got.local_size, want.local_size);
}

// ------------------------------------------------------------ compute_node_layout

TEST(NodeLayout, SingleHost) {
  NodeLayout layout = compute_node_layout({42, 42, 42, 42});
  EXPECT_EQ(layout.node_count, 1);
  EXPECT_EQ(layout.node_of_rank, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(layout.local_rank, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(layout.local_size, (std::vector<int>{4, 4, 4, 4}));
}

TEST(NodeLayout, SingleRank) {
  NodeLayout layout = compute_node_layout({7});
  EXPECT_EQ(layout.node_count, 1);
  EXPECT_EQ(layout.node_of_rank, (std::vector<int>{0}));
  EXPECT_EQ(layout.local_rank, (std::vector<int>{0}));
  EXPECT_EQ(layout.local_size, (std::vector<int>{1}));
}

TEST(NodeLayout, InterleavedHostsNumberedByFirstAppearance) {
  // A B A C B, with ids chosen so that numeric order (C < B < A) differs from appearance.
  const uint64_t A = 0xfffffffffffffff0ull, B = 0x5000, C = 3;
  NodeLayout layout = compute_node_layout({A, B, A, C, B});
  EXPECT_EQ(layout.node_count, 3);
  EXPECT_EQ(layout.node_of_rank, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(layout.local_rank, (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(layout.local_size, (std::vector<int>{2, 2, 2, 1, 2}));
}

TEST(NodeLayout, ZeroRanks) {
  NodeLayout layout = compute_node_layout({});
  EXPECT_EQ(layout.node_count, 0);
  EXPECT_TRUE(layout.node_of_rank.empty());
  EXPECT_TRUE(layout.local_rank.empty());
  EXPECT_TRUE(layout.local_size.empty());
}

TEST(NodeLayout, ZeroHostIdIsAnOrdinaryHost) {
  NodeLayout layout = compute_node_layout({0, 1, 0});
  EXPECT_EQ(layout.node_count, 2);
  EXPECT_EQ(layout.node_of_rank, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(layout.local_size, (std::vector<int>{2, 1, 2}));
}

TEST(NodeLayout, ThousandRanksRoundRobinOnEightHosts) {
  std::vector<uint64_t> host_of_node(8);
  for (int h = 0; h < 8; ++h) {
    host_of_node[h] = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(8 - h);  // not sorted
  }
  std::vector<uint64_t> ids(1000);
  for (int r = 0; r < 1000; ++r) ids[r] = host_of_node[r % 8];
  NodeLayout layout = compute_node_layout(ids);
  expect_same_layout(layout, reference_layout(ids));
  ASSERT_EQ(layout.node_of_rank.size(), 1000u);
  EXPECT_EQ(layout.node_count, 8);
  for (int r = 0; r < 1000; ++r) {
    EXPECT_EQ(layout.node_of_rank[r], r % 8) << r;
    EXPECT_EQ(layout.local_rank[r], r / 8) << r;
    EXPECT_EQ(layout.local_size[r], 125) << r;
  }
}

TEST(NodeLayout, RandomAssignmentsMatchReference) {
  std::mt19937_64 rng(20240601);
  for (int trial = 0; trial < 50; ++trial) {
    int n = static_cast<int>(rng() % 300);
    int hosts = 1 + static_cast<int>(rng() % 12);
    std::vector<uint64_t> palette(hosts);
    for (uint64_t &id : palette) id = rng();
    std::vector<uint64_t> ids(n);
    for (uint64_t &id : ids) id = palette[rng() % hosts];
    SCOPED_TRACE(trial);
    expect_same_layout(compute_node_layout(ids), reference_layout(ids));
  }
}

// ------------------------------------------------------------------- host_id_hash

TEST(HostIdHash, OverrideDecidesAlone) {
  EXPECT_EQ(host_id_hash("alpha", "boot-1", "nodeA"), host_id_hash("beta", "boot-2", "nodeA"));
  EXPECT_NE(host_id_hash("alpha", "boot-1", "nodeA"), host_id_hash("alpha", "boot-1", "nodeB"));
}

TEST(HostIdHash, HostnameAndBootId) {
  uint64_t a1 = host_id_hash("alpha", "1111-2222", "");
  EXPECT_EQ(a1, host_id_hash("alpha", "1111-2222", ""));
  // Two containers with one hostname differ by boot id.
  EXPECT_NE(a1, host_id_hash("alpha", "3333-4444", ""));
  EXPECT_NE(a1, host_id_hash("beta", "1111-2222", ""));
}

TEST(HostIdHash, OverrideDoesNotCollideWithHostname) {
  // An override equal to the text a hostname hashes does not give that host's id.
  EXPECT_NE(host_id_hash("alpha", "b", ""), host_id_hash("x", "y", "alpha/b"));
  EXPECT_NE(host_id_hash("alpha", "", ""), host_id_hash("alpha", "", "alpha"));
}

// --------------------------------------------------------------- shared GPU check

template <size_t N>
void put(char (&dst)[N], const std::string &src) {
  std::memset(dst, 0, N);
  std::strncpy(dst, src.c_str(), N - 1);
}

PeerRecord peer(uint64_t host_id, const std::string &host, int device, const std::string &bus,
                const std::string &cvd = "<unset>", uint8_t uuid_byte = 0) {
  PeerRecord p;
  std::memset(&p, 0, sizeof(p));
  p.pid = 1000 + device;
  p.cuda_device = device;
  p.numa_node = -1;
  p.host_id = host_id;
  put(p.host_label, host);
  put(p.hostname, host);
  put(p.bus_id, bus);
  for (uint8_t &b : p.uuid) b = uuid_byte;
  put(p.cuda_visible_devices, cvd);
  return p;
}

using Groups = std::vector<std::vector<int>>;

TEST(FindSharedGpus, DistinctGpusShareNothing) {
  std::vector<PeerRecord> peers = {peer(1, "n1", 0, "0000:01:00.0"),
                                   peer(1, "n1", 1, "0000:02:00.0"),
                                   peer(1, "n1", 2, "0000:03:00.0")};
  EXPECT_EQ(find_shared_gpus(peers), Groups{});
  EXPECT_EQ(find_shared_gpus({}), Groups{});
}

TEST(FindSharedGpus, RanksWithoutGpuAreIgnored) {
  std::vector<PeerRecord> peers = {peer(1, "n1", -1, ""), peer(1, "n1", -1, ""),
                                   peer(1, "n1", -1, "")};
  EXPECT_EQ(find_shared_gpus(peers), Groups{});
  // A GPU rank next to host-only ranks is not "shared" with them either.
  peers.push_back(peer(1, "n1", 0, "0000:3b:00.0"));
  EXPECT_EQ(find_shared_gpus(peers), Groups{});
  // cuda_device -1 means no GPU, whatever bus id text the record carries.
  peers.push_back(peer(1, "n1", -1, "0000:3b:00.0"));
  EXPECT_EQ(find_shared_gpus(peers), Groups{});
}

TEST(FindSharedGpus, SameBusOnDifferentHostsIsNotShared) {
  std::vector<PeerRecord> peers = {peer(10, "n1", 0, "0000:3b:00.0"),
                                   peer(20, "n2", 0, "0000:3b:00.0"),
                                   peer(30, "n3", 0, "0000:3b:00.0")};
  EXPECT_EQ(find_shared_gpus(peers), Groups{});
}

TEST(FindSharedGpus, TwoRanksShare) {
  std::vector<PeerRecord> peers = {
      peer(1, "n1", 0, "0000:01:00.0"), peer(1, "n1", 1, "0000:02:00.0"),
      peer(2, "n2", 0, "0000:02:00.0"), peer(1, "n1", 1, "0000:02:00.0")};
  EXPECT_EQ(find_shared_gpus(peers), (Groups{{1, 3}}));
}

TEST(FindSharedGpus, DifferentOrdinalsSameBusAreShared) {
  // Different CUDA_VISIBLE_DEVICES make one physical GPU appear under different ordinals.
  std::vector<PeerRecord> peers = {peer(1, "n1", 0, "0000:3b:00.0", "1"),
                                   peer(1, "n1", 1, "0000:3b:00.0", "0,1")};
  EXPECT_EQ(find_shared_gpus(peers), (Groups{{0, 1}}));
}

TEST(FindSharedGpus, ThreeRanksShareOneGpu) {
  std::vector<PeerRecord> peers = {
      peer(1, "n1", 0, "0000:3b:00.0"), peer(1, "n1", 1, "0000:5e:00.0"),
      peer(1, "n1", 0, "0000:3b:00.0"), peer(2, "n2", 0, "0000:3b:00.0"),
      peer(1, "n1", 3, "0000:af:00.0"), peer(1, "n1", 0, "0000:3b:00.0")};
  EXPECT_EQ(find_shared_gpus(peers), (Groups{{0, 2, 5}}));
}

TEST(FindSharedGpus, SeveralGroupsInRankOrder) {
  // Host ids and bus ids sort opposite to rank order, so any map order would differ.
  const uint64_t A = 200, B = 100;
  std::vector<PeerRecord> peers = {
      peer(A, "a", 0, "0000:b0:00.0"),  // 0
      peer(B, "b", 0, "0000:a0:00.0"),  // 1
      peer(A, "a", 0, "0000:b0:00.0"),  // 2
      peer(B, "b", 0, "0000:a0:00.0"),  // 3
      peer(A, "a", 1, "0000:10:00.0"),  // 4
      peer(A, "a", 1, "0000:10:00.0"),  // 5
      peer(B, "b", 1, "0000:10:00.0"),  // 6: same bus as 4/5 but on host B
      peer(A, "a", 2, "0000:20:00.0"),  // 7
  };
  EXPECT_EQ(find_shared_gpus(peers), (Groups{{0, 2}, {1, 3}, {4, 5}}));
}

TEST(FindSharedGpus, EachGroupSortedAndDisjoint) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<PeerRecord> peers;
    int n = 2 + static_cast<int>(rng() % 40);
    for (int r = 0; r < n; ++r) {
      int host = static_cast<int>(rng() % 3);
      int gpu = static_cast<int>(rng() % 5) - 1;  // -1: none
      peers.push_back(peer(static_cast<uint64_t>(host + 1), "h" + std::to_string(host), gpu,
                           gpu < 0 ? "" : "0000:0" + std::to_string(gpu) + ":00.0"));
    }
    Groups groups = find_shared_gpus(peers);
    std::vector<int> seen(n, 0);
    int previous_first = -1;
    for (const std::vector<int> &g : groups) {
      ASSERT_GE(g.size(), 2u);
      EXPECT_GT(g[0], previous_first);
      previous_first = g[0];
      for (size_t i = 0; i < g.size(); ++i) {
        if (i > 0) {
          EXPECT_LT(g[i - 1], g[i]);
        }
        ++seen[g[i]];
        EXPECT_EQ(peers[g[i]].host_id, peers[g[0]].host_id);
        EXPECT_STREQ(peers[g[i]].bus_id, peers[g[0]].bus_id);
        EXPECT_GE(peers[g[i]].cuda_device, 0);
      }
    }
    // Every GPU rank that has a partner on its host must be in a group.
    for (int r = 0; r < n; ++r) {
      EXPECT_LE(seen[r], 1);
      if (peers[r].cuda_device < 0) continue;
      bool partner = false;
      for (int q = 0; q < n; ++q) {
        partner |= q != r && peers[q].cuda_device >= 0 && peers[q].host_id == peers[r].host_id &&
                   std::strcmp(peers[q].bus_id, peers[r].bus_id) == 0;
      }
      EXPECT_EQ(seen[r], partner ? 1 : 0) << "rank " << r;
    }
  }
}

// ------------------------------------------------------------- describe_shared_gpus

TEST(DescribeSharedGpus, NamesRanksHostBusAndVisibleDevices) {
  std::vector<PeerRecord> peers = {
      peer(9, "gpu-node-17", 0, "0000:18:00.0", "0"),
      peer(9, "gpu-node-17", 1, "0000:3b:00.0", "2,3", 0xab),
      peer(9, "gpu-node-17", 2, "0000:5e:00.0", "0"),
      peer(9, "gpu-node-17", 0, "0000:3b:00.0", "3", 0xab),
  };
  Groups groups = find_shared_gpus(peers);
  ASSERT_EQ(groups, (Groups{{1, 3}}));
  std::string text = describe_shared_gpus(peers, groups);
  EXPECT_TRUE(contains(text, "ranks 1 and 3")) << text;
  EXPECT_TRUE(contains(text, "rank 1:")) << text;
  EXPECT_TRUE(contains(text, "rank 3:")) << text;
  EXPECT_TRUE(contains(text, "gpu-node-17")) << text;
  EXPECT_TRUE(contains(text, "0000:3b:00.0")) << text;
  EXPECT_FALSE(contains(text, "0000:18:00.0")) << text;
  EXPECT_TRUE(contains(text, "CUDA_VISIBLE_DEVICES=2,3")) << text;
  EXPECT_TRUE(contains(text, "CUDA_VISIBLE_DEVICES=3")) << text;
  EXPECT_TRUE(contains(text, format_uuid(peers[1].uuid))) << text;
  EXPECT_TRUE(contains(text, "COHORT_ALLOW_SHARED_GPU=1")) << text;
  EXPECT_FALSE(contains(text, "more")) << text;
  // Rank 1's visible devices come with rank 1, rank 3's with rank 3.
  EXPECT_LT(text.find("rank 1:"), text.find("CUDA_VISIBLE_DEVICES=2,3"));
  EXPECT_LT(text.find("CUDA_VISIBLE_DEVICES=2,3"), text.find("rank 3:"));
  EXPECT_LT(text.find("rank 3:"), text.find("CUDA_VISIBLE_DEVICES=3;"));
}

TEST(DescribeSharedGpus, UnsetVisibleDevicesAndThreeRanks) {
  std::vector<PeerRecord> peers = {peer(4, "nodeQ", 0, "0000:07:00.0"),
                                   peer(4, "nodeQ", 0, "0000:07:00.0"),
                                   peer(4, "nodeQ", 0, "0000:07:00.0")};
  std::string text = describe_shared_gpus(peers, find_shared_gpus(peers));
  EXPECT_TRUE(contains(text, "ranks 0, 1 and 2")) << text;
  EXPECT_TRUE(contains(text, "CUDA_VISIBLE_DEVICES=<unset>")) << text;
  EXPECT_TRUE(contains(text, "nodeQ")) << text;
}

TEST(DescribeSharedGpus, CutAfterMaxGroupsSaysHowManyMore) {
  std::vector<PeerRecord> peers;
  for (int g = 0; g < 6; ++g) {
    std::string bus = "0000:" + std::to_string(10 + g) + ":00.0";
    peers.push_back(peer(1, "big", g, bus));
    peers.push_back(peer(1, "big", g, bus));
  }
  Groups groups = find_shared_gpus(peers);
  ASSERT_EQ(groups.size(), 6u);

  std::string text = describe_shared_gpus(peers, groups, 4);
  EXPECT_TRUE(contains(text, "ranks 6 and 7")) << text;   // 4th group listed
  EXPECT_FALSE(contains(text, "ranks 8 and 9")) << text;  // 5th group cut
  EXPECT_FALSE(contains(text, "0000:15:00.0")) << text;   // 6th group's bus
  EXPECT_TRUE(contains(text, "2 more")) << text;
  EXPECT_TRUE(contains(text, "COHORT_ALLOW_SHARED_GPU=1")) << text;

  std::string one = describe_shared_gpus(peers, groups, 1);
  EXPECT_TRUE(contains(one, "5 more")) << one;
  EXPECT_FALSE(contains(one, "ranks 2 and 3")) << one;

  std::string all = describe_shared_gpus(peers, groups, 6);
  EXPECT_TRUE(contains(all, "ranks 10 and 11")) << all;
  EXPECT_FALSE(contains(all, "more")) << all;
}

}  // namespace
}  // namespace cohort
