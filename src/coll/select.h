// Algorithm selection: a table of (collective, memory kinds, message-size range, team-size
// limit, host count) -> algorithm and channel count.  COHORT_COLL_ALGO adds rules in front of
// the defaults, e.g.
//   COHORT_COLL_ALGO="allreduce=ring; allreduce:0-4K=direct; allreduce:4M-=ring*2"
// Each rule is COLLECTIVE[@KINDS][:LO-HI]=ALGORITHM[*CHANNELS], separated by ';' (or ',');
// KINDS are memory kinds joined by '+' (host, cuda-host, cuda-managed, cuda-device; default:
// every kind the algorithm runs on); LO and HI are bytes of one rank's message (K, M, G
// suffixes; either may be left out), the range is [LO, HI); CHANNELS runs the algorithm on
// that many of the plan's channels, each over a part of the buffer.  A later rule wins over an
// earlier one, every override over the defaults; a rule covers no call larger than its
// algorithm takes (AlgorithmInfo::max_bytes: the one-shot kernels' 64 KB), which falls to the
// next rule.  A call no rule covers (today: any on CUDA
// device memory) is refused with COHORT_ERR_NOT_SUPPORTED.  A tuning file (COHORT_TUNING_FILE,
// below) adds measured rules between the overrides and the defaults.
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

// Where a rule comes from: the built-in defaults, a tuning file (COHORT_TUNING_FILE, written
// by cohort_perf --calibrate) or COHORT_COLL_ALGO; tried in the reverse order.
enum class RuleOrigin { kDefault, kTuningFile, kEnvironment };
// "the defaults", "the tuning file", "COHORT_COLL_ALGO".
const char *rule_origin_name(RuleOrigin origin);

struct SelectRule {
  Collective collective;
  MemoryKinds memory = kHostMemory;
  size_t min_bytes = 0;         // inclusive
  size_t max_bytes = SIZE_MAX;  // exclusive
  int min_ranks = 0;            // 0: any team size
  int max_ranks = 0;            // 0: any team size
  int min_hosts = 0;            // 0: any; 2: only teams that span hosts
  int max_hosts = 0;            // 0: any
  const AlgorithmInfo *algorithm = nullptr;
  int channels = 1;
  RuleOrigin origin = RuleOrigin::kDefault;
  const char *why = "";  // a default's reason, for cohort_info
  std::string measured;  // a tuning file's times, "8:3.1 1K:3.4" (bytes: us), for cohort_info
};

// A tuning file's rules: "cohort-tuning 1", then one rule per line,
//   rule COLLECTIVE[@KINDS][:LO-HI]=ALGORITHM[*CHANNELS] ranks=N[-M] hosts=N[-M] us=B:T,...
// (the rule in COHORT_COLL_ALGO's grammar; ranks and hosts where it was measured, inclusive;
// us the measured time per call at each size), "machine TEXT" once, '#' comments.  `source`
// names the file in errors ("COHORT_TUNING_FILE=/path").
struct Tuning {
  std::string machine;
  std::vector<SelectRule> rules;  // in the file's order: the first that matches wins
  uint64_t hash = 0;              // of the file's text, which every rank of a team must share
};
Status parse_tuning(std::string_view text, const std::string &source, Tuning *out);
// Reads and parses a file (a regular file of at most 4 MiB); errors name the path.
Status load_tuning(const std::string &path, Tuning *out);
// The text of such a file, unparsed.
Status read_tuning_text(const std::string &path, std::string *text);

// What cohort_perf --calibrate measured for one collective: candidates (an algorithm on a
// channel count) and, per size (one rank's bytes, ascending), each one's time in us (-1: not
// measured there).
struct TuningCandidate {
  const AlgorithmInfo *algorithm;
  int channels;
  std::string label() const;  // "ring", "ring*2"
};
struct TuningGrid {
  Collective collective;
  std::vector<TuningCandidate> candidates;
  std::vector<size_t> bytes;
  std::vector<std::vector<double>> us;  // [candidate][size]
};
// The file's rule lines for a grid: per size the fastest wins, unless the current winner is
// within 5%; a range ends where the next winner starts, or where its algorithm stops (then
// the next starts there).  `memory`: "host" or "cuda-device"; `where`: "ranks=2 hosts=1".
std::vector<std::string> tuning_rules(const TuningGrid &grid, const std::string &memory,
                                      const std::string &where);
// Comment lines "# [KEY] 8: ring 2.30, direct 1.47", one per size.
std::vector<std::string> tuning_comments(const TuningGrid &grid, const std::string &key);

class Selection {
 public:
  Selection();  // the defaults only
  // Defaults plus the overrides in `text` (an empty text: the defaults); a bad rule is a
  // named COHORT_ERR_INVALID_ARG that quotes it and says what is expected.
  static Status parse(std::string_view text, Selection *out);
  // Puts a tuning file's rules between the overrides and the defaults.
  void add_tuning(const Tuning &tuning);
  // COHORT_COLL_ALGO and COHORT_TUNING_FILE: the selection a team uses.  `settings` (may be
  // null) gets what every rank must share, for the team's settings hash.
  static Status from_environment(Selection *out, std::string *settings);
  // The rule for a call moving `bytes` per rank of `memory` on a team of `ranks` on `hosts`
  // hosts; null when none covers it.
  const SelectRule *choose(Collective collective, cohort_memory_kind_t memory, size_t bytes,
                           int ranks, int hosts = 1) const;
  // One line per rule, in the order they are tried.
  std::string describe() const;
  // The tuning file's machine line ("" without one).
  const std::string &tuning_machine() const { return tuning_machine_; }

 private:
  std::vector<SelectRule> rules_;  // tried in order: overrides (latest first), a tuning
                                   // file's, then the defaults
  size_t overrides_ = 0;           // how many of rules_ come from COHORT_COLL_ALGO
  std::string tuning_machine_;
};

// One rule in COHORT_COLL_ALGO's grammar; errors name `source` and quote the rule.
Status parse_select_rule(std::string_view rule, const std::string &source, SelectRule *out);
// "16K", "1M", "0", "4096" -> bytes; false if not a size.
bool parse_bytes(std::string_view text, size_t *out);
std::string format_bytes(size_t bytes);  // "16K", "1M", "100"
// "host+cuda-host+cuda-managed", "any".
std::string format_memory_kinds(MemoryKinds kinds);

}  // namespace cohort::coll
