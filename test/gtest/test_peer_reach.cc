// The peer-access decision of a host's GPUs (tl_gpu/peer_reach.h): which peers a rank marks
// unreachable, and the reason every rank derives from all the ranks' marks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tl_gpu/peer_reach.h"

using cohort::tl_gpu::ipc_failure_hint;
using cohort::tl_gpu::PeerAccess;
using cohort::tl_gpu::PeerReach;
using cohort::tl_gpu::unreachable_peers;
using cohort::tl_gpu::unreachable_reason;

namespace {

// Four local ranks, team ranks 10..13, each on its own GPU.
std::vector<PeerReach> four_ranks() {
  const char *bus[] = {"0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "0000:c1:00.0"};
  std::vector<PeerReach> ranks;
  for (int q = 0; q < 4; ++q) {
    const std::string name =
        "rank " + std::to_string(10 + q) + " (host x, pid 10" + std::to_string(q) + ")";
    ranks.push_back({10 + q, name, bus[q], 0});
  }
  return ranks;
}

}  // namespace

TEST(PeerReach, SameGpuIsReachableWithoutAsking) {
  // Local ranks 0 and 2 share GPU 7 (MPS); rank 1 is on GPU 9, which this process cannot reach.
  const std::vector<uint64_t> gpus = {7, 9, 7};
  std::vector<int> asked;
  const uint32_t mask = unreachable_peers(gpus, 0, [&](int q) {
    asked.push_back(q);
    return PeerAccess::kNo;
  });
  EXPECT_EQ(mask, 0b010u);
  EXPECT_EQ(asked, std::vector<int>{1});  // neither itself nor the rank sharing its GPU
}

TEST(PeerReach, OnlyANoMarksAPeer) {
  const std::vector<uint64_t> gpus = {1, 2, 3, 4, 5};
  const PeerAccess answers[] = {PeerAccess::kYes, PeerAccess::kYes, PeerAccess::kNotVisible,
                                PeerAccess::kNo, PeerAccess::kYes};
  const uint32_t mask = unreachable_peers(gpus, 1, [&](int q) { return answers[q]; });
  // A GPU that is not visible here counts as reachable (as NCCL's p2pCanConnect).
  EXPECT_EQ(mask, 1u << 3);
  EXPECT_EQ(unreachable_peers({1}, 0, [](int) { return PeerAccess::kNo; }), 0u);  // alone
}

TEST(PeerReach, AllReachableLeavesGpuCollectivesOn) {
  EXPECT_EQ(unreachable_reason(four_ranks(), "T"), "");
  EXPECT_EQ(unreachable_reason({}, "T"), "");
  std::vector<PeerReach> one = {four_ranks()[0]};
  one[0].unreachable = 1u;  // its own bit means nothing
  EXPECT_EQ(unreachable_reason(one, "T"), "");
}

TEST(PeerReach, OneUnreachablePairNamesBothRanksAndGpus) {
  std::vector<PeerReach> ranks = four_ranks();
  ranks[1].unreachable = 1u << 3;  // local rank 1 cannot reach local rank 3's GPU
  const std::string why = unreachable_reason(ranks, "T");
  EXPECT_EQ(why,
            "rank 11 (host x, pid 101) GPU 0000:41:00.0 cannot reach rank 13's GPU 0000:c1:00.0 "
            "by peer access (cudaDeviceCanAccessPeer): GPU collectives are off for team 'T'");
}

TEST(PeerReach, AMarkByEitherRankOfThePairCounts) {
  // Only local rank 3 could ask (it sees GPU 0's and finds no access); rank 0 did not see
  // rank 3's GPU, so its mark is empty.  The one mark turns GPU collectives off.
  std::vector<PeerReach> ranks = four_ranks();
  ranks[3].unreachable = 1u << 0;
  const std::string why = unreachable_reason(ranks, "team-a");
  EXPECT_NE(why.find("rank 13 (host x, pid 103) GPU 0000:c1:00.0 cannot reach rank 10's GPU "
                     "0000:01:00.0"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("team 'team-a'"), std::string::npos) << why;
}

TEST(PeerReach, CountsEachFurtherPairOnce) {
  std::vector<PeerReach> ranks = four_ranks();
  // Pairs 0-2 and 1-3, each reported by both of its ranks, and 3-2 by one: three in all.
  ranks[0].unreachable = 1u << 2;
  ranks[2].unreachable = 1u << 0;
  ranks[1].unreachable = 1u << 3;
  ranks[3].unreachable = (1u << 1) | (1u << 2);
  const std::string why = unreachable_reason(ranks, "T");
  EXPECT_EQ(why.find("rank 10 (host x, pid 100) GPU 0000:01:00.0 cannot reach rank 12's GPU "
                     "0000:81:00.0"),
            0u)
      << why;
  EXPECT_NE(why.find("nor can 2 more pairs"), std::string::npos) << why;
}

TEST(PeerReach, MappingFailureHintSaysWhatToCheck) {
  const std::string hidden = ipc_failure_hint(PeerAccess::kNotVisible);
  EXPECT_NE(hidden.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("nvidia-smi topo -p2p"), std::string::npos) << hidden;
  const std::string seen = ipc_failure_hint(PeerAccess::kYes);
  EXPECT_EQ(seen.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << seen;
  EXPECT_NE(seen.find("namespaces"), std::string::npos) << seen;
}
