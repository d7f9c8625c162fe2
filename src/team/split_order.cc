#include "team/split_order.h"

#include <algorithm>

#include "cohort.h"

namespace cohort {

std::vector<int> split_members(const std::vector<SplitEntry> &entries, int color) {
  std::vector<int> members;
  if (color == COHORT_SPLIT_NOCOLOR) return members;
  for (size_t r = 0; r < entries.size(); ++r) {
    if (entries[r].color == color) members.push_back(static_cast<int>(r));
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return entries[a].key < entries[b].key; });
  return members;
}

}  // namespace cohort
