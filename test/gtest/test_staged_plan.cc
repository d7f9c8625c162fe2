// The pieces of a collective on device memory that runs through host memory (team/
// staged_plan.h): elementwise collectives cut into pieces that cover the buffer once, in
// order, each within a slot, in place on it; the others whole, their overlapping buffers
// (NCCL's in-place forms) overlapping alike in the slot; the sides a rank does not use left out.
#include <gtest/gtest.h>

#include <cstdint>

#include "team/staged_plan.h"

namespace cohort {
namespace {

using coll::Collective;

coll::Call make_call(Collective c, size_t count, const void *src, void *dst, int root = 0,
                     cohort_dtype_t dtype = COHORT_FLOAT32) {
  coll::Call call;
  call.collective = c;
  call.count = count;
  call.src = src;
  call.dst = dst;
  call.root = root;
  call.dtype = dtype;
  return call;
}

char *at(uintptr_t address) { return reinterpret_cast<char *>(address); }

// Pieces tile [0, bytes) of the used sides in order, and every piece fits its slot.
void expect_tiling(const StagedPlan &plan, size_t bytes) {
  size_t next = 0;
  for (const StagedPiece &p : plan.pieces) {
    const StagedCopy &copy = p.has_src ? p.in : p.out;
    EXPECT_EQ(copy.device_offset, next);
    next += copy.bytes;
    if (p.has_src) {
      EXPECT_LE(p.in.slot_offset + p.in.bytes, plan.slot_bytes);
    }
    if (p.has_dst) {
      EXPECT_LE(p.out.slot_offset + p.out.bytes, plan.slot_bytes);
    }
    if (p.has_src && p.has_dst && p.src_offset != p.dst_offset) {
      EXPECT_GE(p.dst_offset, p.src_offset + p.in.bytes);  // no overlap out of place
    }
  }
  EXPECT_EQ(next, bytes);
}

TEST(StagedPlan, AllreduceCutIntoPiecesWithARemainder) {
  // 1000003 floats in pieces of 64 KiB (16384 floats): 61 full pieces and one of 627.
  const StagedPlan plan = plan_staged(
      make_call(Collective::kAllreduce, 1000003, at(0x10000), at(0x900000)), 0, 4, 65536);
  ASSERT_EQ(plan.pieces.size(), 62u);
  EXPECT_EQ(plan.pieces.back().count, 1000003u - 61 * 16384);
  EXPECT_EQ(plan.slot_bytes, 65536u);  // out of place on the device, in place on the slot
  for (const StagedPiece &p : plan.pieces) {
    EXPECT_TRUE(p.has_src && p.has_dst);
    EXPECT_EQ(p.in.bytes, p.out.bytes);
    EXPECT_EQ(p.in.device_offset, p.out.device_offset);
    EXPECT_EQ(p.src_offset, 0u);
    EXPECT_EQ(p.dst_offset, 0u);
  }
  expect_tiling(plan, 1000003u * 4);
}

TEST(StagedPlan, InPlaceAllreduceSharesTheSlot) {
  const StagedPlan plan =
      plan_staged(make_call(Collective::kAllreduce, 100000, at(0x10000), at(0x10000)), 1, 2, 65536);
  EXPECT_EQ(plan.slot_bytes, 65536u);
  for (const StagedPiece &p : plan.pieces) EXPECT_EQ(p.src_offset, p.dst_offset);
  expect_tiling(plan, 400000);
}

TEST(StagedPlan, SmallCallsAreOnePiece) {
  const StagedPlan plan =
      plan_staged(make_call(Collective::kAllreduce, 3, at(0x10000), at(0x20000)), 0, 2, 4096);
  ASSERT_EQ(plan.pieces.size(), 1u);
  EXPECT_EQ(plan.pieces[0].in.bytes, 12u);
  EXPECT_EQ(plan.pieces[0].out.bytes, 12u);
  EXPECT_EQ(plan.pieces[0].src_offset, plan.pieces[0].dst_offset);  // in place on the slot
  EXPECT_EQ(plan.slot_bytes, 12u);
}

TEST(StagedPlan, BroadcastOffTheRootOnlyReceivesAndReduceOffTheRootOnlySends) {
  const StagedPlan bcast = plan_staged(
      make_call(Collective::kBroadcast, 50000, at(0x10000), at(0x90000), 1), 0, 3, 65536);
  ASSERT_EQ(bcast.pieces.size(), 4u);
  for (const StagedPiece &p : bcast.pieces) {
    EXPECT_FALSE(p.has_src);
    EXPECT_EQ(p.in.bytes, 0u);
    EXPECT_TRUE(p.has_dst);
    EXPECT_EQ(p.dst_offset, 0u);
  }
  expect_tiling(bcast, 200000);
  const StagedPlan reduce =
      plan_staged(make_call(Collective::kReduce, 50000, at(0x10000), nullptr, 2), 0, 3, 65536);
  for (const StagedPiece &p : reduce.pieces) {
    EXPECT_TRUE(p.has_src);
    EXPECT_FALSE(p.has_dst);
    EXPECT_EQ(p.out.bytes, 0u);
  }
  expect_tiling(reduce, 200000);
}

TEST(StagedPlan, BlockCollectivesAreWholeWithTheirSides) {
  // Allgather of 1000 floats per rank at 4 ranks: 4000 bytes in, 16000 out, one piece even
  // past the chunk size.
  const StagedPlan gather =
      plan_staged(make_call(Collective::kAllgather, 1000, at(0x10000), at(0x90000)), 2, 4, 4096);
  ASSERT_EQ(gather.pieces.size(), 1u);
  EXPECT_EQ(gather.pieces[0].in.bytes, 4000u);
  EXPECT_EQ(gather.pieces[0].out.bytes, 16000u);
  EXPECT_EQ(gather.pieces[0].count, 1000u);
  const StagedPlan scatter = plan_staged(
      make_call(Collective::kReduceScatter, 1000, at(0x10000), at(0x90000)), 2, 4, 4096);
  EXPECT_EQ(scatter.pieces[0].in.bytes, 16000u);
  EXPECT_EQ(scatter.pieces[0].out.bytes, 4000u);
  const StagedPlan all =
      plan_staged(make_call(Collective::kAlltoall, 1000, at(0x10000), at(0x90000)), 2, 4, 4096);
  EXPECT_EQ(all.pieces[0].in.bytes, 16000u);
  EXPECT_EQ(all.pieces[0].out.bytes, 16000u);
  EXPECT_GE(all.slot_bytes, 32000u);
}

TEST(StagedPlan, InPlaceBlocksKeepTheirPlaceInTheSlot) {
  // Allgather in place: rank 2's input is its block of the output.
  const uintptr_t out = 0x90000;
  const StagedPlan gather =
      plan_staged(make_call(Collective::kAllgather, 1000, at(out + 2 * 4000), at(out)), 2, 4, 4096);
  const StagedPiece &g = gather.pieces[0];
  EXPECT_EQ(gather.slot_bytes, 16000u);
  EXPECT_EQ(g.dst_offset, 0u);
  EXPECT_EQ(g.src_offset, 8000u);
  EXPECT_EQ(g.in.slot_offset, 8000u);
  // Reduce-scatter in place: rank 1's output is its block of the input.
  const uintptr_t in = 0x10000;
  const StagedPlan scatter =
      plan_staged(make_call(Collective::kReduceScatter, 1000, at(in), at(in + 4000)), 1, 4, 4096);
  const StagedPiece &r = scatter.pieces[0];
  EXPECT_EQ(scatter.slot_bytes, 16000u);
  EXPECT_EQ(r.src_offset, 0u);
  EXPECT_EQ(r.dst_offset, 4000u);
  EXPECT_EQ(r.out.slot_offset, 4000u);
  EXPECT_EQ(r.out.bytes, 4000u);
}

TEST(StagedPlan, BarrierMovesNothing) {
  const StagedPlan plan =
      plan_staged(make_call(Collective::kBarrier, 0, nullptr, nullptr), 0, 2, 4096);
  ASSERT_EQ(plan.pieces.size(), 1u);
  EXPECT_FALSE(plan.pieces[0].has_src || plan.pieces[0].has_dst);
  EXPECT_EQ(plan.pieces[0].in.bytes + plan.pieces[0].out.bytes, 0u);
}

TEST(StagedPlan, EveryRankCutsTheSameNumberOfPieces) {
  for (int rank = 0; rank < 3; ++rank) {
    const StagedPlan plan =
        plan_staged(make_call(Collective::kReduce, 70001, at(0x10000),
                              rank == 1 ? at(0x90000) : nullptr, 1, COHORT_FLOAT64),
                    rank, 3, 16384);
    EXPECT_EQ(plan.pieces.size(), 35u) << "rank " << rank;  // 2048 doubles per piece
  }
}

}  // namespace
}  // namespace cohort
