// Tuning files (COHORT_TUNING_FILE): the rules cohort_perf --calibrate measured, read at team
// creation between COHORT_COLL_ALGO's overrides and the defaults.  Every problem is a named
// COHORT_ERR_INVALID_ARG that gives the file, the line and what is expected.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <charconv>
#include <cstring>

#include "coll/select.h"
#include "core/hash.h"
#include "core/text.h"

namespace cohort::coll {
namespace {

constexpr const char *kHeader = "cohort-tuning 1";
constexpr size_t kMaxFileBytes = 4u << 20;

struct Line {
  const std::string &source;
  int number;
  std::string_view text;
};

Status bad_line(const Line &line, const std::string &why) {
  return failf(COHORT_ERR_INVALID_ARG, "%s:%d: %s (the line: '%.*s')", line.source.c_str(),
               line.number, why.c_str(), static_cast<int>(line.text.size()), line.text.data());
}

// "12" -> 12; false unless all digits, 1 to 2^24.
bool parse_count(std::string_view text, int *out) {
  int value = 0;
  const char *end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end || value < 1 || value > (1 << 24)) return false;
  *out = value;
  return true;
}

// "4" -> [4, 4]; "2-8" -> [2, 8].
bool parse_count_range(std::string_view text, int *lo, int *hi) {
  size_t dash = text.find('-');
  int a = 0, b = 0;
  if (!parse_count(text.substr(0, dash), &a)) return false;
  b = a;
  if (dash != std::string_view::npos && !parse_count(text.substr(dash + 1), &b)) return false;
  if (b < a) return false;
  *lo = a;
  *hi = b;
  return true;
}

// "8:3.1,1K:3.4" -> "8:3.1 1K:3.4"; false unless every pair is a size and a time > 0.
bool parse_measured(std::string_view text, std::string *out) {
  out->clear();
  for (std::string_view pair : split(text, ",")) {
    size_t colon = pair.find(':');
    size_t bytes = 0;
    if (colon == std::string_view::npos || !parse_bytes(pair.substr(0, colon), &bytes)) {
      return false;
    }
    std::string us(trim(pair.substr(colon + 1)));
    char *end = nullptr;
    double value = std::strtod(us.c_str(), &end);
    if (us.empty() || *end != '\0' || !(value > 0)) return false;
    *out += (out->empty() ? "" : " ") + format_bytes(bytes) + ":" + us;
  }
  return !out->empty();
}

// "ranks=4 hosts=1 us=8:3.1" after the rule; ranks and hosts are required.
Status parse_conditions(const Line &line, std::string_view rest, SelectRule *rule) {
  bool ranks = false, hosts = false;
  for (std::string_view token : split(rest, " \t")) {
    size_t eq = token.find('=');
    std::string_view key = token.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : token.substr(eq + 1);
    if (key == "ranks" && !ranks) {
      ranks = parse_count_range(value, &rule->min_ranks, &rule->max_ranks);
      if (!ranks) return bad_line(line, "ranks= takes N or LO-HI, at least 1");
    } else if (key == "hosts" && !hosts) {
      hosts = parse_count_range(value, &rule->min_hosts, &rule->max_hosts);
      if (!hosts) return bad_line(line, "hosts= takes N or LO-HI, at least 1");
    } else if (key == "us" && rule->measured.empty()) {
      if (!parse_measured(value, &rule->measured)) {
        return bad_line(line,
                        "us= takes BYTES:MICROSECONDS pairs joined by ',', e.g. 8:3.1,1K:3.4");
      }
    } else {
      return bad_line(line,
                      "'" + std::string(token) + "' is not ranks=, hosts= or us=, or comes twice");
    }
  }
  if (!ranks || !hosts) return bad_line(line, "a rule needs ranks= and hosts=");
  return COHORT_SUCCESS;
}

Status parse_rule_line(const Line &line, std::string_view body, Tuning *out) {
  body = trim(body);
  size_t space = body.find_first_of(" \t");
  SelectRule rule;
  std::string where = line.source + ":" + std::to_string(line.number);
  Status s = parse_select_rule(body.substr(0, space), where, &rule);
  if (is_error(s)) return s;
  rule.origin = RuleOrigin::kTuningFile;
  std::string_view rest = space == std::string_view::npos ? "" : body.substr(space);
  if (s = parse_conditions(line, rest, &rule); is_error(s)) return s;
  out->rules.push_back(std::move(rule));
  return COHORT_SUCCESS;
}

}  // namespace

Status parse_tuning(std::string_view text, const std::string &source, Tuning *out) {
  Tuning tuning;
  tuning.hash = fnv1a(text);
  bool header = false;
  int number = 0;
  for (std::string_view rest = text; !rest.empty() || number == 0;) {
    size_t end = rest.find('\n');
    Line line{source, ++number, trim(rest.substr(0, end))};
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.text.empty() || line.text.front() == '#') continue;
    if (!header) {
      if (line.text != kHeader) {
        return bad_line(line, std::string("the first line that is no comment must be '") + kHeader +
                                  "' (a file written by cohort_perf --calibrate)");
      }
      header = true;
      continue;
    }
    std::string_view word = line.text.substr(0, line.text.find_first_of(" \t"));
    std::string_view body = line.text.substr(word.size());
    Status s = COHORT_SUCCESS;
    if (word == "rule") {
      s = parse_rule_line(line, body, &tuning);
    } else if (word == "machine" && tuning.machine.empty()) {
      tuning.machine = std::string(trim(body));
    } else {
      s = bad_line(line, "a line is 'rule ...', 'machine ...' (once) or a '#' comment");
    }
    if (is_error(s)) return s;
  }
  if (!header) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "%s: empty: no '%s' line (a file written by "
                 "cohort_perf --calibrate)",
                 source.c_str(), kHeader);
  }
  *out = std::move(tuning);
  return COHORT_SUCCESS;
}

Status read_tuning_text(const std::string &path, std::string *text) {
  const std::string source = "COHORT_TUNING_FILE=" + path;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return failf(COHORT_ERR_INVALID_ARG, "%s: cannot open the file: %s", source.c_str(),
                 strerror(errno));
  }
  struct stat st {};
  const char *why = nullptr;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    why = "larger than 4 MiB: not a tuning file";
  }
  std::string content(why == nullptr ? static_cast<size_t>(st.st_size) : 0, '\0');
  size_t done = 0;
  while (why == nullptr && done < content.size()) {
    const ssize_t n = read(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) why = "cannot read the file";
    if (n > 0) done += static_cast<size_t>(n);
  }
  close(fd);
  if (why != nullptr) return failf(COHORT_ERR_INVALID_ARG, "%s: %s", source.c_str(), why);
  *text = std::move(content);
  return COHORT_SUCCESS;
}

Status load_tuning(const std::string &path, Tuning *out) {
  std::string text;
  Status s = read_tuning_text(path, &text);
  if (is_error(s)) return s;
  return parse_tuning(text, "COHORT_TUNING_FILE=" + path, out);
}

}  // namespace cohort::coll

namespace cohort::coll {
namespace {

// A change of winner needs the new one this much faster than the current one.
constexpr double kHysteresis = 1.05;

// The fastest measured candidate at size i; -1 when none was.
int fastest(const TuningGrid &grid, size_t i) {
  int best = -1;
  for (size_t k = 0; k < grid.candidates.size(); ++k) {
    const double t = grid.us[k][i];
    if (t > 0 && (best < 0 || t < grid.us[best][i])) best = static_cast<int>(k);
  }
  return best;
}

std::string format_us(double us) {
  char text[32];
  snprintf(text, sizeof(text), "%.2f", us);
  return text;
}

struct Range {
  size_t first;  // index of its first size
  int winner;
};

std::vector<Range> winning_ranges(const TuningGrid &grid) {
  std::vector<Range> ranges;
  for (size_t i = 0; i < grid.bytes.size(); ++i) {
    const int best = fastest(grid, i);
    if (best < 0) continue;
    if (!ranges.empty()) {
      const double current = grid.us[ranges.back().winner][i];
      if (current > 0 && current <= kHysteresis * grid.us[best][i]) continue;
    }
    ranges.push_back({i, best});
  }
  return ranges;
}

}  // namespace

std::string TuningCandidate::label() const {
  return algorithm->name + (channels > 1 ? "*" + std::to_string(channels) : std::string());
}

std::vector<std::string> tuning_rules(const TuningGrid &grid, const std::string &memory,
                                      const std::string &where) {
  const std::vector<Range> ranges = winning_ranges(grid);
  std::vector<std::string> lines;
  size_t lo = 0;
  for (size_t r = 0; r < ranges.size(); ++r) {
    const size_t end = r + 1 < ranges.size() ? ranges[r + 1].first : grid.bytes.size();
    const TuningCandidate &cand = grid.candidates[ranges[r].winner];
    size_t hi = end < grid.bytes.size() ? grid.bytes[end] : SIZE_MAX;
    if (cand.algorithm->max_bytes < hi - 1) hi = cand.algorithm->max_bytes + 1;
    std::string line = std::string("rule ") + collective_name(grid.collective) + "@" + memory +
                       ":" + format_bytes(lo) + "-" + (hi == SIZE_MAX ? "" : format_bytes(hi)) +
                       "=" + cand.label() + " " + where + " us=";
    std::string times;
    for (size_t i = ranges[r].first; i < end; ++i) {
      const double t = grid.us[ranges[r].winner][i];
      if (t <= 0 || grid.bytes[i] >= hi) continue;
      times += (times.empty() ? "" : ",") + format_bytes(grid.bytes[i]) + ":" + format_us(t);
    }
    lines.push_back(line + times);
    lo = hi;
    if (lo == SIZE_MAX) break;
  }
  return lines;
}

std::vector<std::string> tuning_comments(const TuningGrid &grid, const std::string &key) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < grid.bytes.size(); ++i) {
    std::string line = "# [" + key + "] " + format_bytes(grid.bytes[i]) + ":";
    for (size_t k = 0; k < grid.candidates.size(); ++k) {
      const double t = grid.us[k][i];
      line += (k == 0 ? " " : ", ") + grid.candidates[k].label() + " " +
              (t > 0 ? format_us(t) : std::string("n/a"));
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace cohort::coll
