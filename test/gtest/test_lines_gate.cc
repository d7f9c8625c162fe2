// The host's side of a small piece moved as lines (team/lines_gate.h): the gate opens only once
// every input line carries the piece's flag, unpacks exactly the input's bytes into the slot and
// zeroes the lines; its end packs the output into flagged lines, then moves done forward only.
// Piece numbers never take 0, the flag of an empty line (claim_pieces).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "team/lines_gate.h"
#include "team/staging.h"

namespace cohort {
namespace {

using kernels::kLlMaxLines;
using kernels::ll_flag;
using kernels::ll_lines;
using kernels::LlLine;

constexpr uint8_t kUntouched = 0xA5;

struct Piece {
  std::vector<LlLine> in_lines = std::vector<LlLine>(kLlMaxLines, LlLine{{0, 0}});
  std::vector<LlLine> out_lines = std::vector<LlLine>(kLlMaxLines, LlLine{{0, 0}});
  std::vector<char> in_slot = std::vector<char>(kernels::kLlMaxBytes + 64, char(kUntouched));
  std::vector<char> out_slot = std::vector<char>(kernels::kLlMaxBytes + 64);
  uint32_t done = 0;

  LinesPiece at(size_t in_bytes, size_t out_bytes, uint32_t piece) {
    LinesPiece p;
    p.in_lines = in_lines.data();
    p.in_slot = in_slot.data();
    p.in_bytes = in_bytes;
    p.out_lines = out_lines.data();
    p.out_slot = out_slot.data();
    p.out_bytes = out_bytes;
    p.done = &done;
    p.piece = piece;
    return p;
  }
};

uint8_t in_byte(size_t i) { return static_cast<uint8_t>(i * 7 + 3); }
uint8_t out_byte(size_t i) { return static_cast<uint8_t>(i * 13 + 101); }

// What the kernel writes: the input's lines, flagged.
void write_input(Piece &p, size_t bytes, uint32_t flag, size_t from, size_t to) {
  std::vector<uint8_t> src(bytes);
  for (size_t i = 0; i < bytes; ++i) src[i] = in_byte(i);
  for (size_t i = from; i < to; ++i) put_line(&p.in_lines[i], src.data(), bytes, i, flag);
}

TEST(LinesGate, OpensOnceEveryInputLineCarriesThePiece) {
  for (size_t bytes : {0, 1, 7, 8, 9, 100, 4095, 4096}) {
    Piece p;
    const uint32_t piece = 41;
    auto gate = lines_gate(p.at(bytes, 8, piece));
    const size_t lines = ll_lines(bytes);
    EXPECT_FALSE(gate->open()) << bytes;
    write_input(p, bytes, piece - 1, 0, lines);  // a line left from the piece before
    EXPECT_FALSE(gate->open()) << bytes;
    write_input(p, bytes, piece, 0, lines - 1);
    EXPECT_FALSE(gate->open()) << bytes;  // the last one is missing
    write_input(p, bytes, piece, lines - 1, lines);
    ASSERT_TRUE(gate->open()) << bytes;
    EXPECT_TRUE(gate->open()) << bytes;  // and stays open
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(static_cast<uint8_t>(p.in_slot[i]), in_byte(i)) << bytes << " byte " << i;
    }
    for (size_t i = bytes; i < p.in_slot.size(); ++i) {
      ASSERT_EQ(static_cast<uint8_t>(p.in_slot[i]), kUntouched) << bytes << " byte " << i;
    }
    for (size_t i = 0; i < lines; ++i) {  // zeroed: taken
      EXPECT_EQ(p.in_lines[i].half[0], 0u) << i;
      EXPECT_EQ(p.in_lines[i].half[1], 0u) << i;
    }
  }
}

TEST(LinesGate, AHalfLineDoesNotOpenIt) {
  Piece p;
  auto gate = lines_gate(p.at(16, 16, 5));
  write_input(p, 16, 5, 0, 2);
  p.in_lines[1].half[1] = kernels::ll_half(0x12345678, 4);  // the second half not landed yet
  EXPECT_FALSE(gate->open());
  p.in_lines[1].half[1] = kernels::ll_half(
      in_byte(12) | in_byte(13) << 8 | in_byte(14) << 16 | static_cast<uint32_t>(in_byte(15)) << 24,
      5);
  EXPECT_TRUE(gate->open());
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(static_cast<uint8_t>(p.in_slot[i]), in_byte(i)) << i;
}

TEST(LinesGate, EndPacksTheOutputThenMovesDoneForward) {
  for (size_t bytes : {0, 3, 8, 13, 4096}) {
    Piece p;
    for (size_t i = 0; i < bytes; ++i) p.out_slot[i] = static_cast<char>(out_byte(i));
    p.done = 30;
    const uint32_t piece = 31;
    auto gate = lines_gate(p.at(8, bytes, piece));
    gate->end(COHORT_SUCCESS);
    EXPECT_EQ(p.done, piece);
    const size_t lines = ll_lines(bytes);
    std::vector<uint8_t> got(bytes + 8, kUntouched);
    for (size_t i = 0; i < lines; ++i) {
      ASSERT_TRUE(take_line(&p.out_lines[i], piece, i, got.data(), bytes)) << bytes << " " << i;
    }
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(got[i], out_byte(i)) << bytes << " " << i;
    for (size_t i = bytes; i < got.size(); ++i) ASSERT_EQ(got[i], kUntouched) << i;
    if (lines < kLlMaxLines) {
      EXPECT_EQ(ll_flag(p.out_lines[lines].half[0]), 0u);  // nothing past its lines
    }
    EXPECT_FALSE(take_line(&p.out_lines[0], piece + 1, 0, got.data(), bytes));
  }
  Piece p;  // done already past the piece (a later one failed first): never lowered
  p.done = 50;
  lines_gate(p.at(8, 8, 45))->end(COHORT_ERR_TIMEOUT);
  EXPECT_EQ(p.done, 50u);
  EXPECT_EQ(ll_flag(p.out_lines[0].half[0]), 45u);  // the kernel still finds its lines
}

TEST(LinesGate, PieceNumbersSkipZero) {
  uint32_t next = 0;
  EXPECT_EQ(claim_pieces(&next, 3), 0u);  // 1, 2, 3
  EXPECT_EQ(next, 3u);
  next = 0xFFFFFFFDu;
  EXPECT_EQ(claim_pieces(&next, 2), 0xFFFFFFFDu);  // 0xFFFFFFFE, 0xFFFFFFFF
  EXPECT_EQ(next, 0xFFFFFFFFu);
  EXPECT_EQ(claim_pieces(&next, 1), 0u);  // 0 would come next: 1 instead
  EXPECT_EQ(next, 1u);
  next = 0xFFFFFFFEu;
  EXPECT_EQ(claim_pieces(&next, 4), 0u);  // 0xFFFFFFFF, 0, 1, 2 would pass 0: 1 to 4
  EXPECT_EQ(next, 4u);
  // Later numbers are still after earlier ones in the cyclic order the stream compares in.
  EXPECT_TRUE(reached(1u, 0xFFFFFFFFu));
  EXPECT_FALSE(reached(0xFFFFFFFFu, 1u));
}

}  // namespace
}  // namespace cohort
