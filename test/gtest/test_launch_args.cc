// From the call's record (coll/call.h) to the kernel's parameters (tl_gpu/launch.h): what the
// GPU kernels get for each collective and each of the selection's algorithm ids, with no GPU
// (nothing is launched).
#include <gtest/gtest.h>

#include <vector>

#include "coll/call.h"
#include "tl_gpu/launch.h"

namespace {

namespace k = cohort::kernels;
using cohort::coll::AlgorithmId;
using cohort::coll::Call;
using cohort::coll::Collective;
using cohort::tl_gpu::kernel_args;
using cohort::tl_gpu::Registrations;

// A team of 4 local ranks (team ranks 10, 3, 7, 5), nothing mapped: only its shape is read.
k::DeviceTeam team_of_four() {
  k::DeviceTeam team{};
  team.rank = 1;
  team.size = 4;
  team.max_blocks = 8;
  return team;
}
const std::vector<int> kLocalRanks = {10, 3, 7, 5};

Call call_of(Collective collective, AlgorithmId algorithm, size_t count = 1024) {
  Call call;
  call.collective = collective;
  call.src = reinterpret_cast<const void *>(0x10000);
  call.dst = reinterpret_cast<void *>(0x20000);
  call.count = count;
  call.dtype = COHORT_FLOAT16;
  call.op = COHORT_MAX;
  call.root = 7;
  call.algorithm = algorithm;
  return call;
}

TEST(LaunchArgs, EveryGpuCollectiveGetsItsKindAndTheCallsArguments) {
  const std::pair<Collective, k::CollKind> kinds[] = {
      {Collective::kAllreduce, k::CollKind::kAllreduce},
      {Collective::kReduce, k::CollKind::kReduce},
      {Collective::kBroadcast, k::CollKind::kBroadcast},
      {Collective::kAllgather, k::CollKind::kAllgather},
      {Collective::kReduceScatter, k::CollKind::kReduceScatter},
      {Collective::kAlltoall, k::CollKind::kAlltoall},
      {Collective::kBarrier, k::CollKind::kBarrier}};
  Registrations none;
  for (const auto &[collective, kind] : kinds) {
    k::CollArgs args;
    const Call call = call_of(collective, AlgorithmId::kPipelined);
    ASSERT_EQ(kernel_args(team_of_four(), kLocalRanks, none, call, &args), COHORT_SUCCESS);
    EXPECT_EQ(args.kind, kind);
    EXPECT_EQ(args.src, call.src);
    EXPECT_EQ(args.dst, call.dst);
    EXPECT_EQ(args.count, call.count);
    EXPECT_EQ(args.dtype, k::DType::kFloat16);
    EXPECT_EQ(args.op, k::RedOp::kMax);
    EXPECT_EQ(args.team.size, 4);
    EXPECT_EQ(args.algo, k::CollAlgo::kPipelined);
    // The root as a local rank (team rank 7 is the third): for the rooted collectives only.
    const bool rooted = collective == Collective::kReduce || collective == Collective::kBroadcast;
    EXPECT_EQ(args.root, rooted ? 2 : 0);
  }
}

TEST(LaunchArgs, AlgorithmIdsMapToTheKernelsAlgorithms) {
  Registrations none;
  k::CollArgs args;
  ASSERT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kOneShot), &args),
            COHORT_SUCCESS);
  EXPECT_EQ(args.algo, k::CollAlgo::kOneShot);
  ASSERT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kTwoShot), &args),
            COHORT_SUCCESS);
  EXPECT_EQ(args.algo, k::CollAlgo::kPipelined);  // allreduce's two-shot
  ASSERT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kLl), &args),
            COHORT_SUCCESS);
  EXPECT_EQ(args.algo, k::CollAlgo::kLl);
  // Zero-copy on a team that registered nothing: the windows' algorithm, on every rank alike.
  ASSERT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllgather, AlgorithmId::kZeroCopy), &args),
            COHORT_SUCCESS);
  EXPECT_EQ(args.algo, k::CollAlgo::kPipelined);
  // With registrations (a table exists), zero-copy, and a buffer outside them is said so.
  k::DeviceTeam registered = team_of_four();
  char *const table[1] = {nullptr};
  registered.registered = table;
  ASSERT_EQ(kernel_args(registered, kLocalRanks, none,
                        call_of(Collective::kAllgather, AlgorithmId::kZeroCopy), &args),
            COHORT_SUCCESS);
  EXPECT_EQ(args.algo, k::CollAlgo::kZeroCopy);
  EXPECT_EQ(args.src_ref.slot, -1);
  EXPECT_EQ(args.dst_ref.slot, -1);
}

TEST(LaunchArgs, RefusesWhatTheKernelsCannotRunAndSaysWhy) {
  Registrations none;
  k::CollArgs args;
  // One-shot over its area per rank: named, with the variable to check.
  const size_t over = k::kOneShotBytes / 2 + 1;  // float16 elements
  EXPECT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kOneShot, over), &args),
            COHORT_ERR_INVALID_ARG);
  EXPECT_NE(cohort::last_error().find("COHORT_COLL_ALGO"), std::string::npos);
  EXPECT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kOneShot, over - 1), &args),
            COHORT_SUCCESS);
  // LL over its slots per rank, the same way.
  const size_t over_ll = k::kLlBytes / 2 + 1;
  EXPECT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kLl, over_ll), &args),
            COHORT_ERR_INVALID_ARG);
  EXPECT_NE(cohort::last_error().find("algorithm ll takes at most"), std::string::npos)
      << cohort::last_error();
  EXPECT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kAllreduce, AlgorithmId::kLl, over_ll - 1), &args),
            COHORT_SUCCESS);
  // No GPU kernel for gather.
  EXPECT_EQ(kernel_args(team_of_four(), kLocalRanks, none,
                        call_of(Collective::kGather, AlgorithmId::kDirect), &args),
            COHORT_ERR_NOT_SUPPORTED);
  EXPECT_NE(cohort::last_error().find("gather on GPU device memory"), std::string::npos);
}

}  // namespace
