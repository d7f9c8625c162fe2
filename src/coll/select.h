// Algorithm selection: a table of (collective, message-size range, team-size limit) ->
// algorithm.  The defaults come first in what cohort_info prints; COHORT_COLL_ALGO adds rules
// in front of them, e.g.
//   COHORT_COLL_ALGO="allreduce=ring; allreduce:0-4K=direct; broadcast:1M-=chain"
// Each rule is COLLECTIVE[:LO-HI]=ALGORITHM, separated by ';' (or ','); LO and HI are bytes
// of one rank's message (K, M, G suffixes; either may be left out), the range is [LO, HI).
// A later rule wins over an earlier one, every override over the defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coll/schedule.h"
#include "core/status.h"

namespace cohort::coll {

struct SelectRule {
  Collective collective;
  size_t min_bytes = 0;         // inclusive
  size_t max_bytes = SIZE_MAX;  // exclusive
  int max_ranks = 0;            // 0: any team size
  int min_hosts = 0;            // 0: any; 2: only teams that span hosts
  const AlgorithmInfo *algorithm = nullptr;
  bool from_env = false;
};

class Selection {
 public:
  Selection();  // the defaults only
  // Defaults plus the overrides in `text` (an empty text: the defaults); a bad rule is a
  // named COHORT_ERR_INVALID_ARG that quotes it and says what is expected.
  static Status parse(std::string_view text, Selection *out);
  // The algorithm for a call moving `bytes` per rank on a team of `ranks` on `hosts` hosts.
  const AlgorithmInfo &choose(Collective collective, size_t bytes, int ranks, int hosts = 1) const;
  // One line per rule, in the order they are tried.
  std::string describe() const;

 private:
  std::vector<SelectRule> rules_;  // tried in order: overrides (latest first), then defaults
};

// "16K", "1M", "0", "4096" -> bytes; false if not a size.
bool parse_bytes(std::string_view text, size_t *out);
std::string format_bytes(size_t bytes);  // "16K", "1M", "100"

}  // namespace cohort::coll
