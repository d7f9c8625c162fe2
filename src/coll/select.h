// Algorithm selection: a table of (collective, memory kinds, message-size range, team-size
// limit, host count) -> algorithm and channel count.  COHORT_COLL_ALGO adds rules in front of
// the defaults, e.g.
//   COHORT_COLL_ALGO="allreduce=ring; allreduce:0-4K=direct; allreduce:4M-=ring*2"
// Each rule is COLLECTIVE[@KINDS][:LO-HI]=ALGORITHM[*CHANNELS], separated by ';' (or ',');
// KINDS are memory kinds joined by '+' (host, cuda-host, cuda-managed, cuda-device; default:
// every kind the algorithm runs on); LO and HI are bytes of one rank's message (K, M, G
// suffixes; either may be left out), the range is [LO, HI); CHANNELS runs the algorithm on
// that many of the plan's channels, each over a part of the buffer.  A later rule wins over an
// earlier one, every override over the defaults.  A call no rule covers (today: any on CUDA
// device memory) is refused with COHORT_ERR_NOT_SUPPORTED.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coll/schedule.h"
#include "core/status.h"

namespace cohort::coll {

// Channels an algorithm may run on at most (a plan has up to 32).
constexpr int kMaxRuleChannels = 32;

struct SelectRule {
  Collective collective;
  MemoryKinds memory = kHostMemory;
  size_t min_bytes = 0;         // inclusive
  size_t max_bytes = SIZE_MAX;  // exclusive
  int max_ranks = 0;            // 0: any team size
  int min_hosts = 0;            // 0: any; 2: only teams that span hosts
  const AlgorithmInfo *algorithm = nullptr;
  int channels = 1;
  bool from_env = false;
  const char *why = "";  // a default's reason, for cohort_info
};

class Selection {
 public:
  Selection();  // the defaults only
  // Defaults plus the overrides in `text` (an empty text: the defaults); a bad rule is a
  // named COHORT_ERR_INVALID_ARG that quotes it and says what is expected.
  static Status parse(std::string_view text, Selection *out);
  // The rule for a call moving `bytes` per rank of `memory` on a team of `ranks` on `hosts`
  // hosts; null when none covers it.
  const SelectRule *choose(Collective collective, cohort_memory_kind_t memory, size_t bytes,
                           int ranks, int hosts = 1) const;
  // One line per rule, in the order they are tried.
  std::string describe() const;

 private:
  std::vector<SelectRule> rules_;  // tried in order: overrides (latest first), then defaults
};

// "16K", "1M", "0", "4096" -> bytes; false if not a size.
bool parse_bytes(std::string_view text, size_t *out);
std::string format_bytes(size_t bytes);  // "16K", "1M", "100"
// "host+cuda-host+cuda-managed", "any".
std::string format_memory_kinds(MemoryKinds kinds);

}  // namespace cohort::coll
