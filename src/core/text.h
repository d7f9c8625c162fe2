// Small text helpers the parsers of parameters and of selection rules share.
#pragma once

#include <string_view>
#include <vector>

namespace cohort {

// `text` without leading and trailing white space.
std::string_view trim(std::string_view text);

// The items of `text` between any of the `separators`, trimmed; empty items are dropped.
std::vector<std::string_view> split(std::string_view text, std::string_view separators);

}  // namespace cohort
