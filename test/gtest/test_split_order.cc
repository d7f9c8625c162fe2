// Unit tests for split() membership and order (src/team/split_order.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <utility>
#include <vector>

#include "cohort.h"
#include "team/split_order.h"

namespace cohort {
namespace {

using Ranks = std::vector<int>;

std::vector<SplitEntry> one_color(const std::vector<int> &keys, int color = 0) {
  std::vector<SplitEntry> entries;
  for (int key : keys) entries.push_back({color, key});
  return entries;
}

// Reference: ranks of `color`, sorted by (key, parent rank); nothing for NOCOLOR.
Ranks reference_members(const std::vector<SplitEntry> &entries, int color) {
  if (color == COHORT_SPLIT_NOCOLOR) return {};
  std::vector<std::pair<int, int>> keyed;
  for (size_t r = 0; r < entries.size(); ++r) {
    if (entries[r].color == color) keyed.emplace_back(entries[r].key, static_cast<int>(r));
  }
  std::sort(keyed.begin(), keyed.end());
  Ranks out;
  for (const auto &[key, rank] : keyed) out.push_back(rank);
  return out;
}

TEST(SplitMembers, OrderedByKey) {
  EXPECT_EQ(split_members(one_color({3, 1, 2, 0}), 0), (Ranks{3, 1, 2, 0}));
  EXPECT_EQ(split_members(one_color({10, 30, 20}), 0), (Ranks{0, 2, 1}));
}

TEST(SplitMembers, EqualKeysKeepParentOrder) {
  EXPECT_EQ(split_members(one_color({1, 0, 1, 0, 1}), 0), (Ranks{1, 3, 0, 2, 4}));
  EXPECT_EQ(split_members(one_color({5, 5, 5, 5}), 0), (Ranks{0, 1, 2, 3}));
}

TEST(SplitMembers, NoColorGivesEmpty) {
  std::vector<SplitEntry> entries = {{COHORT_SPLIT_NOCOLOR, 0}, {COHORT_SPLIT_NOCOLOR, 1}, {0, 0}};
  EXPECT_TRUE(split_members(entries, COHORT_SPLIT_NOCOLOR).empty());
  EXPECT_EQ(split_members(entries, 0), (Ranks{2}));
}

TEST(SplitMembers, SeveralColors) {
  std::vector<SplitEntry> entries = {
      {0, 0}, {1, 0}, {0, 0}, {1, 0}, {2, 0}, {COHORT_SPLIT_NOCOLOR, 0}, {1, -1}};
  EXPECT_EQ(split_members(entries, 0), (Ranks{0, 2}));
  EXPECT_EQ(split_members(entries, 1), (Ranks{6, 1, 3}));
  EXPECT_EQ(split_members(entries, 2), (Ranks{4}));
  EXPECT_TRUE(split_members(entries, 3).empty());
}

TEST(SplitMembers, LargeAndUnusualColors) {
  std::vector<SplitEntry> entries = {{INT_MAX, 0}, {7, 0}, {INT_MAX, -1}, {-5, 0}};
  EXPECT_EQ(split_members(entries, INT_MAX), (Ranks{2, 0}));
  EXPECT_EQ(split_members(entries, -5), (Ranks{3}));
}

TEST(SplitMembers, NegativeKeys) {
  EXPECT_EQ(split_members(one_color({0, -5, 5, -1}), 0), (Ranks{1, 3, 0, 2}));
}

TEST(SplitMembers, ExtremeKeysDoNotOverflow) {
  EXPECT_EQ(split_members(one_color({INT_MAX, INT_MIN, 0, INT_MIN}), 0), (Ranks{1, 3, 2, 0}));
}

TEST(SplitMembers, KeysThatFullyReverseOrder) {
  const int n = 33;
  std::vector<int> keys;
  for (int r = 0; r < n; ++r) keys.push_back(n - 1 - r);
  Ranks expected;
  for (int r = n - 1; r >= 0; --r) expected.push_back(r);
  EXPECT_EQ(split_members(one_color(keys, 4), 4), expected);
}

TEST(SplitMembers, EmptyParent) { EXPECT_TRUE(split_members({}, 0).empty()); }

TEST(SplitMembers, RandomCasesMatchReference) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    int n = static_cast<int>(rng() % 48);
    int colors = 1 + static_cast<int>(rng() % 4);
    int key_range = 1 + static_cast<int>(rng() % 6);  // small ranges: many ties
    std::vector<SplitEntry> entries(n);
    for (SplitEntry &e : entries) {
      e.color = static_cast<int>(rng() % (colors + 1)) - 1;  // -1 is NOCOLOR
      e.key = static_cast<int>(rng() % (2 * key_range + 1)) - key_range;
    }
    SCOPED_TRACE(trial);
    size_t placed = 0;
    for (int color = COHORT_SPLIT_NOCOLOR; color <= colors; ++color) {
      Ranks got = split_members(entries, color);
      EXPECT_EQ(got, reference_members(entries, color)) << "color " << color;
      if (color != COHORT_SPLIT_NOCOLOR) placed += got.size();
    }
    size_t with_color = std::count_if(entries.begin(), entries.end(), [](const SplitEntry &e) {
      return e.color != COHORT_SPLIT_NOCOLOR;
    });
    EXPECT_EQ(placed, with_color);
  }
}

}  // namespace
}  // namespace cohort
