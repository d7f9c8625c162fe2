// Membership and order of split() children, as ncclCommSplit: ranks of one color, sorted by
// key, ties in parent-rank order.  Pure, so every rank computes the same children.
#pragma once

#include <cstdint>
#include <vector>

namespace cohort {

struct SplitEntry {
  int32_t color;  // COHORT_SPLIT_NOCOLOR: no child
  int32_t key;
};

// Parent ranks of the child with `color`, in child-rank order; empty for NOCOLOR.
std::vector<int> split_members(const std::vector<SplitEntry> &entries, int color);

}  // namespace cohort
