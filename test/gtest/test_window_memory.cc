// The GPU window's memory as cohort_info --gpu-memory and the init log report it: the parts add
// up to the window the transport allocates, and the per-peer figures divide it right.
#include <gtest/gtest.h>

#include "kernels/device_team.h"
#include "tl_gpu/window_memory.h"

namespace k = cohort::kernels;
using cohort::tl_gpu::window_memory;

TEST(WindowMemory, PartsAddUpToTheLayout) {
  for (int ranks = 1; ranks <= k::kMaxLocalRanks; ++ranks) {
    const auto m = window_memory(ranks);
    EXPECT_EQ(m.control + m.oneshot + m.ll + m.chunks, m.total) << ranks;
    EXPECT_EQ(m.total, k::window_layout(ranks).total_bytes) << ranks;
    EXPECT_EQ(m.oneshot, 2 * static_cast<size_t>(ranks) * k::kOneShotBytes) << ranks;
    EXPECT_EQ(m.ll, 2 * static_cast<size_t>(ranks) * k::kLlSlotBytes) << ranks;
    EXPECT_EQ(m.chunks, size_t{k::kMaxBlocks} * 2 * k::kChunkBytes) << ranks;
    // The flags of every writer, block and slot fit before the one-shot area.
    EXPECT_GE(m.control, k::flag_offset(k::kMaxLocalRanks, 0, 0) + k::kFlagBytes) << ranks;
  }
}

TEST(WindowMemory, PerPeerDividesAmongThePeersAndBlocks) {
  const auto four = window_memory(4);
  EXPECT_EQ(four.per_peer, four.total / 3);
  EXPECT_EQ(four.per_block, four.total / 3 / k::kMaxBlocks);
  const auto one = window_memory(1);
  EXPECT_EQ(one.per_peer, one.total);  // no peer: the whole window
  // NCCL takes about 9 MB per peer per channel; the aim is a quarter of it or less.
  for (int ranks = 2; ranks <= k::kMaxLocalRanks; ++ranks) {
    EXPECT_LE(window_memory(ranks).per_block, size_t{9} * 1000 * 1000 / 4) << ranks;
  }
  EXPECT_EQ(one.registry, sizeof(void *) * k::kMaxRegistrations * k::kMaxLocalRanks);
}

TEST(WindowMemory, DescribeListsEachRankCount) {
  const std::string text = cohort::tl_gpu::describe_window_memory();
  // 4 ranks: 8 MiB of chunks + 512 KiB one-shot + 256 KiB of LL lines + the control lines.
  const auto four = window_memory(4);
  char row[64];
  snprintf(row, sizeof row, "%.2f MiB", four.total / 1048576.0);
  EXPECT_NE(text.find(row), std::string::npos) << text;
  for (const char *ranks : {"    2  ", "    4  ", "    8  ", "   16  "}) {
    EXPECT_NE(text.find(ranks), std::string::npos) << ranks << "\n" << text;
  }
  // A rank alone on its host allocates none (gpu_transport.cc): no row, a line saying so.
  EXPECT_EQ(text.find("    1  "), std::string::npos) << text;
  EXPECT_NE(text.find("alone on its host has no window"), std::string::npos) << text;
}
