// The peer-access decision of a host's GPUs (tl_gpu/peer_reach.h): which peers a rank marks
// unreachable (CUDA's answers, and NVML's for GPUs CUDA hides), and the reason every rank
// derives from all the ranks' marks; NVML's P2P statuses read as answers (topo/nvml.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tl_gpu/peer_reach.h"
#include "topo/nvml.h"

using cohort::tl_gpu::invisible_peer_access;
using cohort::tl_gpu::ipc_failure_hint;
using cohort::tl_gpu::PeerAccess;
using cohort::tl_gpu::PeerMarks;
using cohort::tl_gpu::PeerReach;
using cohort::tl_gpu::unreachable_peers;
using cohort::tl_gpu::unreachable_reason;
using cohort::topo::nvml_p2p;
using cohort::topo::NvmlP2p;
using cohort::topo::p2p_answer;

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
  const PeerMarks marks = unreachable_peers(gpus, 0, [&](int q) {
    asked.push_back(q);
    return PeerAccess::kNo;
  });
  EXPECT_EQ(marks.unreachable, 0b010u);
  EXPECT_EQ(marks.by_nvml, 0u);
  EXPECT_EQ(asked, std::vector<int>{1});  // neither itself nor the rank sharing its GPU
}

TEST(PeerReach, OnlyANoMarksAPeer) {
  const std::vector<uint64_t> gpus = {1, 2, 3, 4, 5, 6, 7};
  const PeerAccess answers[] = {PeerAccess::kYes, PeerAccess::kYes,     PeerAccess::kNotVisible,
                                PeerAccess::kNo,  PeerAccess::kNvmlYes, PeerAccess::kNvmlNo,
                                PeerAccess::kYes};
  const PeerMarks marks = unreachable_peers(gpus, 1, [&](int q) { return answers[q]; });
  // CUDA's no (3) and NVML's (5) mark; a GPU hidden from CUDA that NVML cannot tell of (2)
  // counts as reachable (as NCCL's p2pCanConnect), as does one NVML says is reachable (4).
  EXPECT_EQ(marks.unreachable, (1u << 3) | (1u << 5));
  EXPECT_EQ(marks.by_nvml, 1u << 5);
  const PeerMarks alone = unreachable_peers({1}, 0, [](int) { return PeerAccess::kNo; });
  EXPECT_EQ(alone.unreachable, 0u);
}

TEST(PeerReach, HiddenPeerTakesNvmlsAnswer) {
  EXPECT_EQ(invisible_peer_access(NvmlP2p::kOk), PeerAccess::kNvmlYes);
  EXPECT_EQ(invisible_peer_access(NvmlP2p::kNotSupported), PeerAccess::kNvmlNo);
  // No verdict, and no NVML: today's choice, counted reachable.
  EXPECT_EQ(invisible_peer_access(NvmlP2p::kUnknown), PeerAccess::kNotVisible);
  EXPECT_EQ(invisible_peer_access(NvmlP2p::kUnavailable), PeerAccess::kNotVisible);

  // Slurm's --gpus-per-task: rank 0 sees only its GPU; NVML says its GPU and local rank 2's
  // lack P2P, cannot tell of local rank 3's and finds local rank 1's fine.
  const std::vector<uint64_t> gpus = {1, 2, 3, 4};
  const NvmlP2p nvml[] = {NvmlP2p::kOk, NvmlP2p::kOk, NvmlP2p::kNotSupported, NvmlP2p::kUnknown};
  const PeerMarks marks =
      unreachable_peers(gpus, 0, [&](int q) { return invisible_peer_access(nvml[q]); });
  EXPECT_EQ(marks.unreachable, 1u << 2);
  EXPECT_EQ(marks.by_nvml, 1u << 2);

  // Without NVML nothing is marked: the team maps every window, as before NVML was asked.
  const PeerMarks without =
      unreachable_peers(gpus, 0, [](int) { return invisible_peer_access(NvmlP2p::kUnavailable); });
  EXPECT_EQ(without.unreachable, 0u);
  EXPECT_EQ(without.by_nvml, 0u);
}

TEST(PeerReach, NvmlStatusesOfReadsAndWrites) {
  // nvmlGpuP2PStatus_t: 0 OK, 1 CHIPSET_NOT_SUPPORED, 2 GPU_NOT_SUPPORTED,
  // 3 IOH_TOPOLOGY_NOT_SUPPORTED, 4 DISABLED_BY_REGKEY, 5 NOT_SUPPORTED, 6 UNKNOWN.
  EXPECT_EQ(p2p_answer(0, 0).status, NvmlP2p::kOk);
  EXPECT_EQ(p2p_answer(0, 0).detail, "");
  for (int no = 1; no <= 5; ++no) {
    EXPECT_EQ(p2p_answer(no, 0).status, NvmlP2p::kNotSupported) << no;
    EXPECT_EQ(p2p_answer(0, no).status, NvmlP2p::kNotSupported) << no;  // writes count too
  }
  EXPECT_EQ(p2p_answer(1, 1).detail,
            "P2P reads: not supported by the chipset; P2P writes: not supported by the chipset");
  EXPECT_EQ(p2p_answer(0, 4).detail, "P2P writes: disabled by a registry key");
  EXPECT_EQ(p2p_answer(6, 0).status, NvmlP2p::kUnknown);
  EXPECT_EQ(p2p_answer(6, 0).detail, "P2P reads: unknown");
  // A definite no outranks an unknown; a status newer than this code is no verdict.
  EXPECT_EQ(p2p_answer(6, 3).status, NvmlP2p::kNotSupported);
  EXPECT_EQ(p2p_answer(3, 6).status, NvmlP2p::kNotSupported);
  EXPECT_EQ(p2p_answer(0, 42).status, NvmlP2p::kUnknown);
  EXPECT_EQ(p2p_answer(0, 42).detail, "P2P writes: status 42");
}

TEST(PeerReach, NvmlThatCannotAnswerSaysWhy) {
  // Bus ids no host has: without NVML, or with it, no answer but kUnavailable, one per peer.
  const std::vector<cohort::topo::NvmlP2pAnswer> answers =
      nvml_p2p("ffff:fe:1f.7", {"ffff:fe:1e.7", "ffff:fe:1d.7"});
  ASSERT_EQ(answers.size(), 2u);
  for (const auto &answer : answers) {
    EXPECT_EQ(answer.status, NvmlP2p::kUnavailable);
    EXPECT_FALSE(answer.detail.empty());
  }
  EXPECT_TRUE(nvml_p2p("ffff:fe:1f.7", {}).empty());
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

TEST(PeerReach, APairNvmlMarkedSaysNvmlSaidSo) {
  std::vector<PeerReach> ranks = four_ranks();
  // Local rank 1 sees only its GPU; NVML says it cannot reach local rank 3's.
  ranks[1].unreachable = ranks[1].by_nvml = 1u << 3;
  const std::string why = unreachable_reason(ranks, "T");
  EXPECT_EQ(why.find("rank 11 (host x, pid 101) GPU 0000:41:00.0 cannot reach rank 13's GPU "
                     "0000:c1:00.0 by peer access (NVML's nvmlDeviceGetP2PStatus"),
            0u)
      << why;
  EXPECT_EQ(why.find("cudaDeviceCanAccessPeer"), std::string::npos) << why;
  EXPECT_NE(why.find("nvidia-smi topo -p2p rw"), std::string::npos) << why;

  // Who said so follows the pair named: rank 10's CUDA mark of rank 12 comes first.
  ranks[0].unreachable = 1u << 2;
  const std::string both = unreachable_reason(ranks, "T");
  EXPECT_EQ(both.find("rank 10 (host x, pid 100) GPU 0000:01:00.0 cannot reach rank 12's GPU "
                      "0000:81:00.0 by peer access (cudaDeviceCanAccessPeer) (nor can 1 more "
                      "pairs"),
            0u)
      << both;
  EXPECT_EQ(both.find("NVML"), std::string::npos) << both;
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
  const std::string hidden =
      ipc_failure_hint(PeerAccess::kNotVisible, "libnvidia-ml.so.1: cannot open shared object");
  EXPECT_NE(hidden.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("NVML could not tell"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("(libnvidia-ml.so.1: cannot open shared object)"), std::string::npos)
      << hidden;
  EXPECT_NE(hidden.find("nvidia-smi topo -p2p"), std::string::npos) << hidden;
  const std::string nvml_yes = ipc_failure_hint(PeerAccess::kNvmlYes);
  EXPECT_NE(nvml_yes.find("NVML reported peer access"), std::string::npos) << nvml_yes;
  EXPECT_NE(nvml_yes.find("namespaces"), std::string::npos) << nvml_yes;
  const std::string seen = ipc_failure_hint(PeerAccess::kYes);
  EXPECT_EQ(seen.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << seen;
  EXPECT_NE(seen.find("namespaces"), std::string::npos) << seen;
}
