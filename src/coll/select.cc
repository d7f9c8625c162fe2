#include "coll/select.h"

#include <cctype>
#include <cstdio>
#include <string>

#include "core/log.h"
#include "core/params.h"
#include "core/text.h"

namespace cohort::coll {
namespace {

// Up to this many bytes an allreduce goes direct (one hop, n-1 messages per rank), beyond it
// around the ring (bandwidth); direct stops paying off on larger teams.
constexpr size_t kDirectAllreduceBytes = 16 * 1024;
constexpr int kDirectAllreduceRanks = 16;

// Small allreduces between hosts gather to each host's leader first: H-1 messages per leader
// cross hosts instead of n-1 per rank.
constexpr size_t kHierAllreduceBytes = 64 * 1024;

struct DefaultRule {
  Collective collective;
  size_t max_bytes;
  int max_ranks;
  const char *algorithm;
  int min_hosts;
  const char *why;
};

// Every default covers the memory its algorithm runs on (host memory, pinned or managed too).
// Host collectives stay on one channel: on the H200 host (16 cores, both channels of a
// host-only plan) two channels took 0.96-1.51x the time of one for allreduce, 0.84-1.45x for
// reduce and 0.99-2.02x for broadcast at 256 KB-64 MB, np 4 and 8 (a ratio near 1 is noise).
constexpr const char *kOneChannel = "one channel: two were slower on a 16-core host";
const DefaultRule kDefaults[] = {
    {Collective::kAllreduce, kHierAllreduceBytes, 0, "hier", 2,
     "few messages cross hosts: latency"},
    {Collective::kAllreduce, kDirectAllreduceBytes, kDirectAllreduceRanks, "direct", 0,
     "one hop: latency"},
    {Collective::kAllreduce, SIZE_MAX, 0, "ring", 0,
     "bandwidth; one channel: two were slower on a 16-core host"},
    {Collective::kReduce, SIZE_MAX, 0, "chain", 0, kOneChannel},
    {Collective::kBroadcast, SIZE_MAX, 0, "chain", 0, kOneChannel},
    {Collective::kAllgather, SIZE_MAX, 0, "ring", 0, ""},
    {Collective::kReduceScatter, SIZE_MAX, 0, "ring", 0, ""},
    {Collective::kAlltoall, SIZE_MAX, 0, "pairwise", 0, ""},
    {Collective::kBarrier, SIZE_MAX, 0, "dissemination", 0, ""},
    {Collective::kGather, SIZE_MAX, 0, "direct", 0, "the root takes n-1 blocks in any shape"},
    {Collective::kScatter, SIZE_MAX, 0, "direct", 0, "the root sends n-1 blocks in any shape"},
    {Collective::kScan, SIZE_MAX, 0, "chain", 0, "pipelined: one transfer for large messages"},
    {Collective::kExscan, SIZE_MAX, 0, "chain", 0, "pipelined: one transfer for large messages"},
    {Collective::kAllgatherv, SIZE_MAX, 0, "ring", 0, "as allgather"},
    {Collective::kAlltoallv, SIZE_MAX, 0, "pairwise", 0, "as alltoall"},
    {Collective::kGatherv, SIZE_MAX, 0, "direct", 0, "as gather"},
    {Collective::kScatterv, SIZE_MAX, 0, "direct", 0, "as scatter"},
    {Collective::kReduceScatterv, SIZE_MAX, 0, "ring", 0, "as reduce_scatter"},
    {Collective::kAllreduce, 64 << 10, 0, "oneshot", 0, "GPU: one handshake: latency"},
    {Collective::kAllreduce, SIZE_MAX, 0, "zerocopy", 0,
     "GPU: registered buffers read and written in place; two-shot where some are not"},
    {Collective::kBroadcast, 64 << 10, 0, "oneshot", 0, "GPU: one handshake: latency"},
    {Collective::kBroadcast, SIZE_MAX, 0, "pipelined", 0, "GPU: any size"},
    {Collective::kReduce, 64 << 10, 0, "oneshot", 0, "GPU: one handshake: latency"},
    {Collective::kReduce, SIZE_MAX, 0, "pipelined", 0, "GPU: any size"},
    {Collective::kAllgather, 64 << 10, 0, "oneshot", 0, "GPU: one handshake: latency"},
    {Collective::kAllgather, SIZE_MAX, 0, "zerocopy", 0,
     "GPU: registered buffers reached in place; pipelined where some are not"},
    {Collective::kReduceScatter, 64 << 10, 0, "oneshot", 0, "GPU: one handshake: latency"},
    {Collective::kReduceScatter, SIZE_MAX, 0, "zerocopy", 0,
     "GPU: registered buffers reached in place; pipelined where some are not"},
    {Collective::kAlltoall, 64 << 10, 0, "oneshot", 0, "GPU: one handshake: latency"},
    {Collective::kAlltoall, SIZE_MAX, 0, "zerocopy", 0,
     "GPU: registered buffers reached in place; pipelined where some are not"},
    {Collective::kBarrier, SIZE_MAX, 0, "flags", 0, "GPU: one handshake"},
};

// ", <= 16 ranks", ", 2-4 hosts", ", >= 2 hosts", ", 1 host"; "" for any.  `what`: singular.
std::string describe_limits(int lo, int hi, const char *what) {
  const std::string many = std::string(what) + "s";
  if (lo <= 0 && hi <= 0) return "";
  if (hi <= 0) return ", >= " + std::to_string(lo) + " " + many;
  if (lo <= 0) return ", <= " + std::to_string(hi) + " " + many;
  if (lo == hi) return ", " + std::to_string(lo) + " " + (lo == 1 ? what : many.c_str());
  return ", " + std::to_string(lo) + "-" + std::to_string(hi) + " " + many;
}

std::string collective_names() {
  std::string names;
  for (int c = 0; c < static_cast<int>(Collective::kCount); ++c) {
    names += (c == 0 ? "" : ", ") + std::string(collective_name(static_cast<Collective>(c)));
  }
  return names;
}

std::string names_of(Collective c) {
  std::string names;
  for (const AlgorithmInfo &info : algorithm_table()) {
    if (info.collective != c) continue;
    names += (names.empty() ? "" : ", ") + std::string(info.name);
  }
  return names;
}

// A rule and where it comes from ("COHORT_COLL_ALGO", or a tuning file and line), for errors.
struct RuleText {
  std::string_view text;
  const std::string &source;
};

Status bad_rule(const RuleText &rule, const std::string &why) {
  return failf(COHORT_ERR_INVALID_ARG,
               "%s: rule '%.*s': %s (a rule is "
               "COLLECTIVE[@KINDS][:LO-HI]=ALGORITHM[*CHANNELS], e.g. allreduce:0-16K=direct)",
               rule.source.c_str(), static_cast<int>(rule.text.size()), rule.text.data(),
               why.c_str());
}

// "host+cuda-host" -> the set; false if a name is not a memory kind.
bool parse_memory_kinds(std::string_view text, MemoryKinds *out) {
  *out = 0;
  while (!text.empty()) {
    size_t plus = text.find('+');
    std::string_view name = trim(text.substr(0, plus));
    bool found = false;
    for (int k = 0; k < COHORT_NUM_MEMORY_KINDS; ++k) {
      auto kind = static_cast<cohort_memory_kind_t>(k);
      if (name != cohort_memory_kind_name(kind)) continue;
      *out |= memory_bit(kind);
      found = true;
    }
    if (!found) return false;
    text = plus == std::string_view::npos ? std::string_view() : text.substr(plus + 1);
  }
  return *out != 0;
}

// "ring*2" -> the algorithm's name and the channel count.
Status parse_target(const RuleText &rule, std::string_view target, std::string *name,
                    int *channels) {
  size_t star = target.find('*');
  *name = std::string(trim(target.substr(0, star)));
  if (star == std::string_view::npos) return COHORT_SUCCESS;
  size_t count = 0;
  if (!parse_bytes(target.substr(star + 1), &count) || count < 1 ||
      count > static_cast<size_t>(kMaxRuleChannels)) {
    return bad_rule(rule,
                    "the channel count after '*' must be 1-" + std::to_string(kMaxRuleChannels));
  }
  *channels = static_cast<int>(count);
  return COHORT_SUCCESS;
}

Status parse_range(const RuleText &rule, std::string_view range, SelectRule *out) {
  size_t dash = range.find('-');
  if (dash == std::string_view::npos) return bad_rule(rule, "a range is LO-HI");
  std::string_view lo = trim(range.substr(0, dash)), hi = trim(range.substr(dash + 1));
  if (!lo.empty() && !parse_bytes(lo, &out->min_bytes)) {
    return bad_rule(rule, "'" + std::string(lo) + "' is not a size (e.g. 0, 4096, 16K, 1M)");
  }
  if (!hi.empty() && !parse_bytes(hi, &out->max_bytes)) {
    return bad_rule(rule, "'" + std::string(hi) + "' is not a size (e.g. 0, 4096, 16K, 1M)");
  }
  if (out->min_bytes >= out->max_bytes) return bad_rule(rule, "the range is empty (LO >= HI)");
  return COHORT_SUCCESS;
}

// The algorithm a rule names must exist, run on the rule's memory and, on several channels,
// split its buffer.
Status check_algorithm(const RuleText &rule, const std::string &collective, const std::string &name,
                       bool memory_given, SelectRule *out) {
  out->algorithm = find_algorithm(out->collective, name.c_str());
  if (out->algorithm == nullptr) {
    return bad_rule(rule, "no algorithm '" + name + "' for " + collective +
                              " (it has: " + names_of(out->collective) + ")");
  }
  if (!memory_given) out->memory = out->algorithm->memory;
  if ((out->memory & ~out->algorithm->memory) != 0) {
    return bad_rule(
        rule, name + " runs on " + format_memory_kinds(out->algorithm->memory) + " memory only");
  }
  if (out->channels > 1 && !out->algorithm->splits) {
    return bad_rule(rule, collective + " " + name + " runs on one channel only");
  }
  if (out->min_bytes > out->algorithm->max_bytes) {
    return bad_rule(rule, name + " takes at most " + format_bytes(out->algorithm->max_bytes) +
                              " per rank: the range starts above it");
  }
  return COHORT_SUCCESS;
}

Status parse_rule_text(const RuleText &rule, SelectRule *out) {
  size_t eq = rule.text.find('=');
  if (eq == std::string_view::npos) return bad_rule(rule, "no '='");
  std::string_view left = trim(rule.text.substr(0, eq));
  std::string name;
  Status s = parse_target(rule, trim(rule.text.substr(eq + 1)), &name, &out->channels);
  if (is_error(s)) return s;
  size_t colon = left.find(':');
  std::string_view head = left.substr(0, colon);
  size_t at = head.find('@');
  std::string collective(trim(head.substr(0, at)));
  if (!collective_from_name(collective.c_str(), &out->collective) ||
      out->collective == Collective::kCount) {
    return bad_rule(rule, "unknown collective '" + collective + "' (" + collective_names() + ")");
  }
  if (at != std::string_view::npos && !parse_memory_kinds(head.substr(at + 1), &out->memory)) {
    return bad_rule(rule, "'" + std::string(head.substr(at + 1)) +
                              "' is not a list of memory kinds (host, cuda-host, cuda-managed, "
                              "cuda-device, joined by '+')");
  }
  if (colon != std::string_view::npos) {
    if (s = parse_range(rule, left.substr(colon + 1), out); is_error(s)) return s;
  }
  out->origin = RuleOrigin::kEnvironment;
  return check_algorithm(rule, collective, name, at != std::string_view::npos, out);
}

}  // namespace

Status parse_select_rule(std::string_view rule, const std::string &source, SelectRule *out) {
  return parse_rule_text(RuleText{rule, source}, out);
}

const char *rule_origin_name(RuleOrigin origin) {
  switch (origin) {
    case RuleOrigin::kTuningFile: return "the tuning file";
    case RuleOrigin::kEnvironment: return "COHORT_COLL_ALGO";
    default: return "the defaults";
  }
}

bool parse_bytes(std::string_view text, size_t *out) {
  text = trim(text);
  if (text.empty() || !isdigit(static_cast<unsigned char>(text.front()))) return false;
  size_t value = 0, i = 0;
  for (; i < text.size() && isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (value > (SIZE_MAX - 9) / 10) return false;
    value = value * 10 + static_cast<size_t>(text[i] - '0');
  }
  std::string_view suffix = text.substr(i);
  int shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    return false;
  if (shift > 0 && value > (SIZE_MAX >> shift)) return false;
  *out = value << shift;
  return true;
}

std::string format_memory_kinds(MemoryKinds kinds) {
  if (kinds == kAnyMemory) return "any";
  std::string text;
  for (int k = 0; k < COHORT_NUM_MEMORY_KINDS; ++k) {
    auto kind = static_cast<cohort_memory_kind_t>(k);
    if (kinds & memory_bit(kind))
      text += (text.empty() ? "" : "+") + std::string(cohort_memory_kind_name(kind));
  }
  return text;
}

std::string format_bytes(size_t bytes) {
  const char *units[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

Selection::Selection() {
  for (const DefaultRule &d : kDefaults) {
    SelectRule rule;
    rule.collective = d.collective;
    rule.max_bytes = d.max_bytes;
    rule.max_ranks = d.max_ranks;
    rule.min_hosts = d.min_hosts;
    rule.algorithm = find_algorithm(d.collective, d.algorithm);
    rule.memory = rule.algorithm->memory;
    rule.why = d.why;
    rules_.push_back(rule);
  }
}

Status Selection::parse(std::string_view text, Selection *out) {
  Selection selection;
  std::vector<SelectRule> overrides;
  for (std::string_view rule_text : split(text, ";,")) {
    SelectRule rule;
    Status s = parse_select_rule(rule_text, "COHORT_COLL_ALGO", &rule);
    if (is_error(s)) return s;
    overrides.insert(overrides.begin(), rule);  // the latest is tried first
  }
  selection.rules_.insert(selection.rules_.begin(), overrides.begin(), overrides.end());
  selection.overrides_ = overrides.size();
  *out = std::move(selection);
  return COHORT_SUCCESS;
}

void Selection::add_tuning(const Tuning &tuning) {
  rules_.insert(rules_.begin() + static_cast<std::ptrdiff_t>(overrides_), tuning.rules.begin(),
                tuning.rules.end());
  tuning_machine_ = tuning.machine;
}

Status Selection::from_environment(Selection *out, std::string *settings) {
  std::string rules, file;
  Selection selection;
  Status s = param_string("COLL_ALGO", &rules);
  if (!is_error(s)) s = param_string("TUNING_FILE", &file);
  if (!is_error(s)) s = parse(rules, &selection);
  Tuning tuning;
  if (!is_error(s) && !file.empty()) s = load_tuning(file, &tuning);
  if (is_error(s)) return s;
  selection.add_tuning(tuning);
  *out = std::move(selection);
  if (settings != nullptr) {
    *settings = "COHORT_COLL_ALGO='" + rules + "'";
    // The text, not the path: hosts may keep the same file in different places.
    if (!file.empty()) {
      *settings += strprintf(" COHORT_TUNING_FILE: %zu rules, text hash %016llx",
                             tuning.rules.size(), static_cast<unsigned long long>(tuning.hash));
    }
  }
  if (!file.empty()) {
    COHORT_LOG_INFO(COLL, "tuning file %s: %zu rules, measured on %s", file.c_str(),
                    tuning.rules.size(),
                    tuning.machine.empty() ? "(no machine line)" : tuning.machine.c_str());
  }
  return COHORT_SUCCESS;
}

const SelectRule *Selection::choose(Collective collective, cohort_memory_kind_t memory,
                                    size_t bytes, int ranks, int hosts) const {
  for (const SelectRule &rule : rules_) {
    if (rule.collective != collective || bytes < rule.min_bytes || bytes >= rule.max_bytes ||
        bytes > rule.algorithm->max_bytes) {
      continue;
    }
    if ((rule.memory & memory_bit(memory)) == 0) continue;
    if (rule.max_ranks > 0 && ranks > rule.max_ranks) continue;
    if (ranks < rule.min_ranks) continue;
    if (rule.min_hosts > 0 && hosts < rule.min_hosts) continue;
    if (rule.max_hosts > 0 && hosts > rule.max_hosts) continue;
    return &rule;
  }
  return nullptr;
}

std::string Selection::describe() const {
  std::string text;
  for (const SelectRule &rule : rules_) {
    std::string range =
        rule.max_bytes == SIZE_MAX && rule.min_bytes == 0
            ? "any size"
            : format_bytes(rule.min_bytes) + " <= bytes < " +
                  (rule.max_bytes == SIZE_MAX ? "inf" : format_bytes(rule.max_bytes));
    std::string ranks = describe_limits(rule.min_ranks, rule.max_ranks, "rank") +
                        describe_limits(rule.min_hosts, rule.max_hosts, "host");
    std::string target = rule.algorithm->name;
    if (rule.channels > 1) target += " x" + std::to_string(rule.channels) + " channels";
    std::string why = rule.origin == RuleOrigin::kDefault
                          ? rule.why
                          : "(" + std::string(rule_origin_name(rule.origin)) + ")";
    char line[512];
    snprintf(line, sizeof(line), "  %-15s %-28s %-28s -> %-20s%s\n",
             collective_name(rule.collective), format_memory_kinds(rule.memory).c_str(),
             (range + ranks).c_str(), target.c_str(), why.c_str());
    text += line;
    if (!rule.measured.empty()) text += "      measured (bytes:us): " + rule.measured + "\n";
  }
  return text;
}

}  // namespace cohort::coll
