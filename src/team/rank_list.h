// "0-3, 7, 9" for messages that name ranks; long lists are cut with a count.
#pragma once

#include <string>
#include <vector>

namespace cohort {

std::string format_rank_list(const std::vector<int> &sorted_ranks, size_t max_items = 16);

}  // namespace cohort
