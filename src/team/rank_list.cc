#include "team/rank_list.h"

namespace cohort {

std::string format_rank_list(const std::vector<int> &sorted_ranks, size_t max_items) {
  std::string out;
  size_t items = 0;
  for (size_t i = 0; i < sorted_ranks.size();) {
    size_t j = i;
    while (j + 1 < sorted_ranks.size() && sorted_ranks[j + 1] == sorted_ranks[j] + 1) ++j;
    if (items == max_items) {
      out += std::string(out.empty() ? "" : ", ") + "... (" + std::to_string(sorted_ranks.size()) +
             " ranks in all)";
      break;
    }
    if (!out.empty()) out += ", ";
    out += std::to_string(sorted_ranks[i]);
    if (j > i) out += "-" + std::to_string(sorted_ranks[j]);
    ++items;
    i = j + 1;
  }
  return out;
}

}  // namespace cohort
