#include "perf_tuning_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>

#include "coll/select.h"
#include "core/build_info_text.h"
#include "core/status.h"
#include "core/text.h"

namespace cohort::perf {
namespace {

constexpr const char *kHeader = "cohort-tuning 1";
constexpr const char *kMachine = "machine ";
constexpr const char *kNoGpu = "no GPU";

// The key of a rule line ("rule allreduce@host:0-8K=ring ranks=2 hosts=1 ..." ->
// "allreduce@host ranks=2 hosts=1"), or of a block's comment ("# [KEY] ..."); "" for others.
std::string key_of(const std::string &line) {
  if (line.rfind("# [", 0) == 0) {
    const size_t end = line.find(']');
    return end == std::string::npos ? "" : line.substr(3, end - 3);
  }
  if (line.rfind("rule ", 0) != 0) return "";
  std::vector<std::string_view> words = split(line, " \t");
  if (words.size() < 2) return "";
  std::string key(words[1].substr(0, words[1].find_first_of(":=")));
  for (std::string_view w : words) {
    if (w.rfind("ranks=", 0) == 0 || w.rfind("hosts=", 0) == 0) key += " " + std::string(w);
  }
  return key;
}

// A machine line's first two fields: the GPU ("no GPU" for host runs) and the cores.
std::pair<std::string, std::string> machine_fields(const std::string &machine) {
  const size_t comma = machine.find(", ");
  const size_t second = machine.find(", ", comma == std::string::npos ? comma : comma + 2);
  if (comma == std::string::npos) return {machine, ""};
  return {machine.substr(0, comma), machine.substr(comma + 2, second - comma - 2)};
}

// "" when blocks measured on `old` and on `machine` may share a file: the same cores, and the
// same GPU where both ran on one.
std::string mismatch(const std::string &old, const std::string &machine) {
  if (old.empty() || machine.empty()) return "";
  const auto [old_gpu, old_cores] = machine_fields(old);
  const auto [gpu, cores] = machine_fields(machine);
  if (old_cores == cores && (old_gpu == gpu || old_gpu == kNoGpu || gpu == kNoGpu)) return "";
  return "was measured on '" + old + "', this is '" + machine + "'";
}

// The lines of the file at `path` to keep (every block whose key is not in `keys`), or why
// they cannot be kept.  A missing file keeps nothing.
std::string kept_lines(const std::string &path, const std::string &machine,
                       const std::vector<std::string> &keys, std::vector<std::string> *out,
                       std::string *old_machine) {
  if (access(path.c_str(), F_OK) != 0 && errno == ENOENT) return "";
  std::string content;
  coll::Tuning old;
  if (is_error(coll::read_tuning_text(path, &content)) ||
      is_error(coll::parse_tuning(content, path, &old))) {
    return path + " is no tuning file (" + last_error() + "): give another file name";
  }
  if (std::string why = mismatch(old.machine, machine); !why.empty()) {
    return path + " " + why + ": give another file name";
  }
  *old_machine = old.machine;
  std::istringstream text(content);
  bool body = false;
  for (std::string line; std::getline(text, line);) {
    const std::string_view trimmed = trim(line);
    if (!body) {
      body = trimmed == kHeader;
      continue;
    }
    if (trimmed.rfind(kMachine, 0) == 0) continue;
    const std::string key = key_of(std::string(trimmed));
    if (!key.empty() && std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    out->push_back(line);
  }
  return "";
}

}  // namespace

std::string tuning_file_usable(const std::string &path, const std::string &machine) {
  std::vector<std::string> lines;
  std::string old;
  return kept_lines(path, machine, {}, &lines, &old);
}

std::string machine_text(const std::string &gpu_name) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  return (gpu_name.empty() ? std::string(kNoGpu) : gpu_name) + ", " +
         std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cores, host " + host + ", Cohort " +
         version_text();
}

std::string write_tuning_file(const std::string &path, const std::string &machine,
                              const std::vector<TuningBlock> &blocks, size_t *rules) {
  std::vector<std::string> keys, kept;
  for (const TuningBlock &b : blocks) keys.push_back(b.key);
  std::string old;
  std::string why = kept_lines(path, machine, keys, &kept, &old);
  if (!why.empty()) return why;
  // A host run merged into a file of GPU runs keeps the GPU's name.
  const std::string written = machine_fields(machine).first == kNoGpu && !old.empty()
                                  ? machine_fields(old).first + machine.substr(machine.find(", "))
                                  : machine;
  const std::string temporary = path + ".new";
  FILE *f = fopen(temporary.c_str(), "w");
  if (f == nullptr) return "cannot write " + temporary + ": " + strerror(errno);
  char date[64];
  const time_t now = time(nullptr);
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
  fprintf(f,
          "# Cohort's selection table, measured by cohort_perf --calibrate (last run %s).\n"
          "# Use it with COHORT_TUNING_FILE=%s; cohort_info --algorithms prints it.\n"
          "# A block per collective, memory, team size and host count: every candidate's time\n"
          "# per call (us, out of place) by one rank's bytes, then the rules.\n%s\n%s%s\n",
          date, path.c_str(), kHeader, kMachine, written.c_str());
  for (const std::string &line : kept) fprintf(f, "%s\n", line.c_str());
  for (const TuningBlock &b : blocks) {
    for (const std::string &line : b.comments) fprintf(f, "%s\n", line.c_str());
    for (const std::string &line : b.rules) fprintf(f, "%s\n", line.c_str());
  }
  if (fclose(f) != 0) return "cannot write " + temporary + ": " + strerror(errno);
  coll::Tuning tuning;
  if (is_error(coll::load_tuning(temporary, &tuning))) {
    return "wrote a file it cannot read back (kept as " + temporary + "): " + last_error();
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    return "cannot rename " + temporary + " to " + path + ": " + strerror(errno);
  }
  *rules = tuning.rules.size();
  return "";
}

}  // namespace cohort::perf
