// Algorithm selection: the default table, COHORT_COLL_ALGO overrides and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "coll/select.h"
#include "core/status.h"

namespace cohort::coll {
namespace {

std::string chosen(const Selection &s, Collective c, size_t bytes, int ranks = 4, int hosts = 1,
                   cohort_memory_kind_t memory = COHORT_MEMORY_HOST) {
  const SelectRule *rule = s.choose(c, memory, bytes, ranks, hosts);
  if (rule == nullptr) return "(none)";
  return std::string(rule->algorithm->name) +
         (rule->channels > 1 ? "*" + std::to_string(rule->channels) : "");
}

TEST(Selection, DefaultsGoDirectForSmallAllreducesOnSmallTeamsAndRingOtherwise) {
  Selection s;
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8), "direct");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 16 * 1024 - 1), "direct");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 16 * 1024), "ring");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 17), "ring") << "direct stops at 16 ranks";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 64, 2), "hier") << "small, between hosts";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 64 * 1024 - 1, 4, 2), "hier");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 64 * 1024, 4, 2), "ring");
  EXPECT_EQ(chosen(s, Collective::kBroadcast, 1 << 30), "chain");
  EXPECT_EQ(chosen(s, Collective::kAlltoall, 0), "pairwise");
  EXPECT_EQ(chosen(s, Collective::kBarrier, 0), "dissemination");
  // Host-only collectives, and what each takes on any size and shape.
  const std::pair<Collective, const char *> host_only[] = {
      {Collective::kGather, "direct"},      {Collective::kScatter, "direct"},
      {Collective::kScan, "chain"},         {Collective::kExscan, "chain"},
      {Collective::kAllgatherv, "ring"},    {Collective::kAlltoallv, "pairwise"},
      {Collective::kGatherv, "direct"},     {Collective::kScatterv, "direct"},
      {Collective::kReduceScatterv, "ring"}};
  for (auto [c, algorithm] : host_only) {
    EXPECT_EQ(chosen(s, c, 8), algorithm) << collective_name(c);
    EXPECT_EQ(chosen(s, c, 1 << 30, 64, 4), algorithm) << collective_name(c);
    EXPECT_EQ(chosen(s, c, 8, 4, 1, COHORT_MEMORY_CUDA_DEVICE), "(none)") << "no GPU algorithm";
  }
}

TEST(Selection, OverridesWinOverDefaultsAndLaterRulesOverEarlierOnes) {
  Selection s;
  ASSERT_EQ(Selection::parse("allreduce=ring; allreduce:0-4K=direct", &s), COHORT_SUCCESS)
      << last_error();
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 4095), "direct");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 4096), "ring");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 64), "direct") << "an override has no rank limit";
  ASSERT_EQ(Selection::parse("allreduce:0-4K=direct, allreduce=ring", &s), COHORT_SUCCESS);
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8), "ring") << "the later rule covers it all";
  ASSERT_EQ(Selection::parse("allreduce:1M-=direct", &s), COHORT_SUCCESS);
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1 << 20), "direct");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, (1 << 20) - 1), "ring");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 100), "direct") << "defaults still apply below";
}

TEST(Selection, DescribeListsOverridesFirstAndMarksThem) {
  Selection s;
  ASSERT_EQ(Selection::parse("reduce_scatter:64K-=ring", &s), COHORT_SUCCESS);
  std::string text = s.describe();
  size_t override_at = text.find("reduce_scatter  host+cuda-host+cuda-managed  64K <= bytes < inf");
  ASSERT_NE(override_at, std::string::npos) << text;
  EXPECT_LT(override_at, text.find("allreduce")) << text;
  EXPECT_NE(text.find("(COHORT_COLL_ALGO)"), std::string::npos) << text;
  EXPECT_NE(text.find("host+cuda-host+cuda-managed  0 <= bytes < 16K, <= 16 ranks"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("0 <= bytes < 64K, >= 2 hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("-> hier"), std::string::npos) << text;
}

// The memory kind is a dimension of the table: host memory, pinned or managed, takes the host
// algorithms; device memory the GPU kernels.
TEST(Selection, MemoryKindsSelectHostOrGpuAlgorithms) {
  Selection s;
  for (cohort_memory_kind_t kind :
       {COHORT_MEMORY_HOST, COHORT_MEMORY_CUDA_HOST, COHORT_MEMORY_CUDA_MANAGED}) {
    EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1, kind), "direct") << kind;
  }
  // Device memory takes the GPU kernels: one-shot below 64 KB, zero-copy (two-shot on
  // buffers not registered; pipelined for the others) from there.
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1, COHORT_MEMORY_CUDA_DEVICE), "oneshot");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, (64 << 10) - 1, 4, 1, COHORT_MEMORY_CUDA_DEVICE),
            "oneshot");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 64 << 10, 4, 1, COHORT_MEMORY_CUDA_DEVICE),
            "zerocopy");
  for (Collective c : {Collective::kBroadcast, Collective::kReduce, Collective::kAllgather,
                       Collective::kReduceScatter, Collective::kAlltoall}) {
    EXPECT_EQ(chosen(s, c, (64 << 10) - 1, 4, 1, COHORT_MEMORY_CUDA_DEVICE), "oneshot")
        << collective_name(c);
    const bool zerocopy = c != Collective::kBroadcast && c != Collective::kReduce;
    EXPECT_EQ(chosen(s, c, 64 << 10, 4, 1, COHORT_MEMORY_CUDA_DEVICE),
              zerocopy ? "zerocopy" : "pipelined")
        << collective_name(c);
  }
  EXPECT_EQ(chosen(s, Collective::kBarrier, 0, 4, 1, COHORT_MEMORY_CUDA_DEVICE), "flags");
  EXPECT_EQ(chosen(s, Collective::kBarrier, 0, 4, 1, COHORT_MEMORY_HOST), "dissemination");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1 << 20, 4, 1, COHORT_MEMORY_HOST), "ring")
      << "GPU algorithms never take host memory";
  ASSERT_EQ(Selection::parse("allreduce@cuda-managed=ring", &s), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1, COHORT_MEMORY_CUDA_MANAGED), "ring");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1, COHORT_MEMORY_HOST), "direct")
      << "the rule covers managed memory only";
  ASSERT_EQ(Selection::parse("allreduce@host+cuda-host:1K-=direct", &s), COHORT_SUCCESS);
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1 << 20, 4, 1, COHORT_MEMORY_CUDA_HOST), "direct");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1 << 20, 4, 1, COHORT_MEMORY_CUDA_MANAGED), "ring");
  EXPECT_NE(s.describe().find("host+cuda-host"), std::string::npos) << s.describe();
}

// A rule covers no call larger than its algorithm takes: such a call falls to the next rule.
TEST(Selection, RulesStopWhereTheirAlgorithmStops) {
  Selection s;
  ASSERT_EQ(Selection::parse("allreduce@cuda-device=oneshot; allgather@cuda-device=oneshot", &s),
            COHORT_SUCCESS)
      << last_error();
  for (Collective c : {Collective::kAllreduce, Collective::kAllgather}) {
    EXPECT_EQ(chosen(s, c, kOneShotMaxBytes, 4, 1, COHORT_MEMORY_CUDA_DEVICE), "oneshot");
    EXPECT_EQ(chosen(s, c, kOneShotMaxBytes + 1, 4, 1, COHORT_MEMORY_CUDA_DEVICE), "zerocopy")
        << collective_name(c) << ": the defaults take it";
  }
  EXPECT_EQ(find_algorithm(Collective::kAllreduce, "oneshot")->max_bytes, kOneShotMaxBytes);
  EXPECT_EQ(find_algorithm(Collective::kAllreduce, "twoshot")->max_bytes, SIZE_MAX);
}

TEST(Selection, ChannelCountsRunSplittableAlgorithmsOnSeveralChannels) {
  Selection s;
  ASSERT_EQ(Selection::parse("allreduce:1M-=ring*4; broadcast=chain*2", &s), COHORT_SUCCESS)
      << last_error();
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1 << 20), "ring*4");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1 << 19), "ring");
  EXPECT_EQ(chosen(s, Collective::kBroadcast, 8), "chain*2");
  EXPECT_NE(s.describe().find("ring x4 channels"), std::string::npos) << s.describe();
}

TEST(Selection, BadRulesAreNamedErrorsAndLeaveTheSelectionAsItWas) {
  Selection s;
  ASSERT_EQ(Selection::parse("allreduce=ring", &s), COHORT_SUCCESS);
  const struct {
    const char *text, *says;
  } cases[] = {
      {"allreduce", "no '='"},
      {"allreduse=ring", "unknown collective 'allreduse'"},
      {"gathr=direct",
       "(allreduce, reduce, broadcast, allgather, reduce_scatter, alltoall, "
       "barrier, gather, scatter, scan, exscan, allgatherv, alltoallv, gatherv, scatterv, "
       "reduce_scatterv)"},
      {"gather@cuda-device=direct", "direct runs on host+cuda-host+cuda-managed memory only"},
      {"scatter=direct*2", "scatter direct runs on one channel only"},
      {"allreduce=tree",
       "no algorithm 'tree' for allreduce (it has: ring, direct, hier, oneshot, ll, twoshot, "
       "zerocopy)"},
      {"allreduce:4K-1K=direct", "the range is empty"},
      {"allreduce:4X-=direct", "'4X' is not a size"},
      {"allreduce:4096=direct", "a range is LO-HI"},
      {"broadcast=chain;allgather:1-2=pairwise", "no algorithm 'pairwise' for allgather"},
      {"allreduce@gpu=ring", "'gpu' is not a list of memory kinds"},
      {"allreduce@cuda-device=ring", "ring runs on host+cuda-host+cuda-managed memory only"},
      {"allgather=ring*2", "allgather ring runs on one channel only"},
      {"allreduce=ring*0", "the channel count after '*' must be 1-32"},
      {"allreduce=ring*33", "the channel count after '*' must be 1-32"},
  };
  for (const auto &c : cases) {
    EXPECT_EQ(Selection::parse(c.text, &s), COHORT_ERR_INVALID_ARG) << c.text;
    EXPECT_NE(last_error().find(c.says), std::string::npos) << c.text << ": " << last_error();
    EXPECT_NE(last_error().find("COHORT_COLL_ALGO"), std::string::npos) << last_error();
  }
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8), "ring") << "a failed parse changed nothing";
}

TEST(Selection, SizesParseWithSuffixesAndRejectOverflow) {
  size_t v = 0;
  EXPECT_TRUE(parse_bytes("16K", &v));
  EXPECT_EQ(v, 16384u);
  EXPECT_TRUE(parse_bytes("3M", &v));
  EXPECT_EQ(v, 3u << 20);
  EXPECT_TRUE(parse_bytes("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(parse_bytes("", &v));
  EXPECT_FALSE(parse_bytes("-1", &v));
  EXPECT_FALSE(parse_bytes("1KB", &v));
  EXPECT_FALSE(parse_bytes("99999999999999999999999", &v));
  EXPECT_FALSE(parse_bytes("17179869184G", &v));
  EXPECT_EQ(format_bytes(16384), "16K");
  EXPECT_EQ(format_bytes(1000), "1000");
}

}  // namespace
}  // namespace cohort::coll

namespace cohort::coll {
namespace {

// The device transport dispatches on an algorithm's id, the table and COHORT_COLL_ALGO name
// it: every row's id must be the one its name means, whatever the collective.
TEST(AlgorithmTable, EveryIdIsTheOneItsNameMeans) {
  const std::pair<const char *, AlgorithmId> kNames[] = {
      {"ring", AlgorithmId::kRing},           {"direct", AlgorithmId::kDirect},
      {"hier", AlgorithmId::kHier},           {"chain", AlgorithmId::kChain},
      {"pairwise", AlgorithmId::kPairwise},   {"dissemination", AlgorithmId::kDissemination},
      {"oneshot", AlgorithmId::kOneShot},     {"twoshot", AlgorithmId::kTwoShot},
      {"pipelined", AlgorithmId::kPipelined}, {"zerocopy", AlgorithmId::kZeroCopy},
      {"flags", AlgorithmId::kFlags},         {"ll", AlgorithmId::kLl}};
  for (const AlgorithmInfo &a : algorithm_table()) {
    const auto named = std::find_if(std::begin(kNames), std::end(kNames),
                                    [&](const auto &n) { return std::string(n.first) == a.name; });
    ASSERT_NE(named, std::end(kNames)) << a.name << " has no id";
    EXPECT_EQ(named->second, a.id) << collective_name(a.collective) << " " << a.name;
  }
}

}  // namespace
}  // namespace cohort::coll
