#include "core/params.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/log.h"
#include "core/text.h"

namespace cohort {
namespace {

constexpr ParamRange kAny{};
constexpr double kDay = 86400;
constexpr double kGiB = 1 << 30;
constexpr double kTiB = kGiB * 1024;
constexpr ParamRange kTimeout{0.001, 7 * kDay};
constexpr ParamRange kSearchWork{1, 1e12};
constexpr ParamRange kMailboxBytes{64, kGiB, true};
constexpr ParamRange kMessageBytes{0, kTiB};
constexpr ParamRange kStagedChunk{4096, kGiB, true};
constexpr ParamRange kLanes{0, 8};
constexpr ParamRange kFragment{64 * 1024, 64 << 20, true};
constexpr ParamRange kStagedKernel{0, 1 << 20};
constexpr ParamRange kStagedLines{0, 4096};
constexpr ParamRange kCacheEntries{
    0, 512};  // kernels::kMaxRegistrations / 2  // kernels::kLlMaxBytes (coll_staged.cc checks)

// How the file parameters name a file per host and process (log_expand_path).
#define COHORT_PATH_PATTERNS "%h expands to the host, %p to the pid"

const std::vector<ParamSpec> kParams = {
    {"DEBUG", ParamType::kEnum, "WARN", "", "NONE,WARN,INFO,TRACE", kAny,
     "log level; INFO prints the init report on rank 0"},
    {"DEBUG_SUBSYS", ParamType::kList, "ALL", "", "INIT,PARAM,OOB,TOPO,GRAPH,COLL,NET,ALL", kAny,
     "subsystems to log, comma-separated; a leading ^ excludes the listed ones"},
    {"DEBUG_FILE", ParamType::kString, "", "", "", kAny,
     "log to this file instead of stderr; " COHORT_PATH_PATTERNS},
    {"INIT_TIMEOUT", ParamType::kDouble, "300", "s", "", kTimeout,
     "how long a team-creation phase waits for peers before failing with the missing ranks"},
    {"SOCKET_IFNAME", ParamType::kString, "", "", "", kAny,
     "the interface of the unique-id rendezvous (teams without MPI): name prefixes, comma "
     "separated, '^' excludes, '=' exact; unset: NCCL_SOCKET_IFNAME, else the first one up "
     "that is not loopback"},
    {"ALLOW_SHARED_GPU", ParamType::kBool, "0", "", "", kAny,
     "let several ranks of one host use the same GPU (run them under MPS)"},
    {"HOST_ID", ParamType::kString, "", "", "", kAny,
     "override the host identity (default: hostname + boot_id); tests use it to fake nodes"},
    {"TOPO_FILE", ParamType::kString, "", "", "", kAny,
     "load this host's topology from this XML file instead of detecting it"},
    {"TOPO_DUMP_FILE", ParamType::kString, "", "", "", kAny,
     "write the host's topology as XML (once per process); " COHORT_PATH_PATTERNS},
    {"GRAPH_FILE", ParamType::kString, "", "", "", kAny,
     "use the rings in this XML file for this host instead of searching"},
    {"GRAPH_DUMP_FILE", ParamType::kString, "", "", "", kAny,
     "write the host's searched rings as XML; " COHORT_PATH_PATTERNS},
    {"P2P_LEVEL", ParamType::kEnum, "AUTO", "", "AUTO,LOC,NVL,NVB,PIX,PXB,PHB,SYS", kAny,
     "worst path type on which GPUs use P2P (CUDA IPC) instead of host memory; AUTO: PXB on "
     "Intel and ARM CPUs, PHB elsewhere"},
    {"SEARCH_BUDGET", ParamType::kInt, "2000000", "hops", "", kSearchWork,
     "ring-search work per host, in hop evaluations (a candidate next GPU's route weighed "
     "against the bandwidth left; a ring through G GPUs weighs about G^2/2), before the best "
     "rings found so far (or a fixed order) are taken"},
    {"SHM_MAILBOX_BYTES", ParamType::kInt, "65536", "bytes", "", kMailboxBytes,
     "shared-memory mailbox between two ranks of a host (a power of two); a host of L ranks "
     "maps L x L of them"},
    {"SHM_SINGLE_COPY_BYTES", ParamType::kInt, "131072", "bytes", "", kMessageBytes,
     "within a host, messages of at least this size are read straight from the sender's memory "
     "(cross-memory attach) instead of through the mailbox; 0: never.  Off by itself where "
     "the kernel refuses"},
    {"UCX_DIRECT_BYTES", ParamType::kInt, "65536", "bytes", "", kMessageBytes,
     "between hosts, messages of at least this size go as direct UCX messages, in fragments "
     "straight between the ranks' buffers, instead of through the staging slots; 0: never.  "
     "Every rank of a team must set the same"},
    {"UCX_LANES", ParamType::kInt, "0", "lanes", "", kLanes,
     "UCX workers, each with a thread of its own, that carry a process's direct messages between "
     "hosts side by side (a message's fragments take them in turn; two processes use as many as "
     "the one with fewer has); 0: half the host's CPUs per rank on it, from 1 to 8"},
    {"UCX_FRAGMENT_BYTES", ParamType::kInt, "4194304", "bytes", "", kFragment,
     "between hosts, the largest fragment of a direct message (a power of two): a message goes "
     "in fragments of an eighth of it, from 256 KiB (or this, where smaller) to this, over the "
     "lanes in turn.  Every rank of a team must set the same"},
    {"COLL_TIMEOUT", ParamType::kDouble, "600", "s", "", kTimeout,
     "how long a collective waits without any progress before failing with the ranks it waits "
     "for"},
    {"STAGED_CHUNK_BYTES", ParamType::kInt, "8388608", "bytes", "", kStagedChunk,
     "collectives on device memory that run through host memory (a team across hosts): "
     "allreduce, reduce and broadcast go in pieces of this size (a power of two), so that "
     "copies overlap the wire.  Every rank of a team must set the same"},
    {"STAGED_KERNEL_BYTES", ParamType::kInt, "65536", "bytes", "", kStagedKernel,
     "collectives on device memory through host memory: a call of one piece whose input and "
     "output are at most this size runs its copies and its wait for the host as one small "
     "kernel instead of the stream's copies and memory operations (a CUDA build, on a real "
     "driver); 0: never.  Ranks may differ"},
    {"STAGED_LINES_BYTES", ParamType::kInt, "512", "bytes", "", kStagedLines,
     "collectives on device memory through host memory: such a kernel whose input and output "
     "are at most this size moves them as lines that carry their own flags (NCCL's LL), one "
     "round trip across PCIe each way instead of two; 0: never.  Ranks may differ"},
    {"REG_CACHE_ENTRIES", ParamType::kInt, "32", "", "", kCacheEntries,
     "the registration cache: device buffers that the Open MPI component passes are "
     "registered with the team on their own (at points where the ranks agree anyway), so that "
     "calls on them take the zero-copy algorithms; at most this many allocations per rank "
     "(and at most 1024 / (2 x ranks on the GPU's host)), the least recently used evicted "
     "first; 0: off.  Ranks may differ"},
    {"NIC_AFFINITY", ParamType::kEnum, "AUTO", "", "AUTO,OFF", kAny,
     "on a host with several NICs, AUTO gives UCX (UCX_NET_DEVICES, unless set) only the NIC "
     "nearest the rank's GPU, GPUs equally near several NICs taking them in turn; OFF leaves "
     "UCX's own choice"},
    {"PROGRESS_BIND", ParamType::kEnum, "SPREAD", "", "SPREAD,INHERIT", kAny,
     "where Cohort's own threads (the progress thread, the wire's lanes) run: SPREAD, on "
     "any CPU the job may use; INHERIT, on the rank's own cores (they then take turns with the "
     "application's thread there)"},
    {"COLL_ALGO", ParamType::kString, "", "", "", kAny,
     "algorithm rules in front of the defaults: COLLECTIVE[@KINDS][:LO-HI]=ALGORITHM[*CHANNELS];"
     "... with memory KINDS joined by + (host, cuda-host, cuda-managed, cuda-device), LO/HI bytes "
     "per rank (K, M, G), e.g. allreduce:0-4K=direct;broadcast=chain*2 (cohort_info --algorithms "
     "prints the table)"},
    {"TUNING_FILE", ParamType::kString, "", "", "", kAny,
     "a selection table measured on this machine (cohort_perf --calibrate FILE writes it): its "
     "rules sit between COHORT_COLL_ALGO and the defaults; every rank of a team must read the "
     "same text (cohort_info --algorithms prints it with the measured times)"},
};

// For Cohort's own tests: read like the others, listed apart (cohort_info --params testing).
const std::vector<ParamSpec> kTestingParams = {
    {"INJECT_FAILURE", ParamType::kString, "", "", "", kAny,
     "PHASE:RANK[:stall] makes team rank RANK fail (or stall past the timeout) in PHASE of team "
     "creation; align:RANK:skew makes it report a different plan"},
    {"INJECT_NO_P2P", ParamType::kInt, "-1", "", "", kAny,
     "RANK: team rank RANK's GPU counts as reaching no other local rank's by peer access (as "
     "if cudaDeviceCanAccessPeer said no, GPUs shared included), so its teams turn GPU "
     "collectives off"},
    {"INJECT_UCX_FAILURE", ParamType::kString, "", "", "", kAny,
     "RANK:PEER[:MESSAGES] makes team rank RANK's UCX endpoint to PEER fail as if UCX had "
     "reported the peer lost, once MESSAGES (1) more messages went to it"},
};

const std::vector<ScriptVariable> kScriptVariables = {
    {"COHORT_PREFIX", "contrib/slurm/cohort.sbatch: where Cohort is installed"},
    {"COHORT_LAUNCHER", "contrib/slurm/cohort.sbatch: srun (default) or mpirun"},
    {"COHORT_PERF", "test/mpi/perf-check.sh: the cohort_perf binary to run"},
    {"COHORT_PERF_CHECK_FILTER", "test/mpi/perf-check.sh: which checks to run"},
    {"COHORT_RANDOM_RUNS", "test/mpi/run-random.sh: the randomized runs to make"},
    {"COHORT_TEST_*", "Cohort's test scripts: test selection and settings"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return out;
}

Status bad(std::string_view what, std::string_view text, const char *expected) {
  return failf(COHORT_ERR_INVALID_ARG, "%.*s='%.*s': %s", static_cast<int>(what.size()),
               what.data(), static_cast<int>(text.size()), text.data(), expected);
}

std::string env_name(const ParamSpec &spec) { return std::string("COHORT_") + spec.name; }

}  // namespace

const std::vector<ParamSpec> &param_table() { return kParams; }
const std::vector<ParamSpec> &testing_param_table() { return kTestingParams; }

const ParamSpec *param_find(std::string_view name) {
  if (name.substr(0, 7) == "COHORT_") name.remove_prefix(7);
  for (const std::vector<ParamSpec> *table : {&kParams, &kTestingParams}) {
    for (const ParamSpec &spec : *table) {
      if (name == spec.name) return &spec;
    }
  }
  return nullptr;
}

const char *param_type_name(ParamType type) {
  switch (type) {
    case ParamType::kBool: return "bool";
    case ParamType::kInt: return "int";
    case ParamType::kDouble: return "double";
    case ParamType::kString: return "string";
    case ParamType::kEnum: return "enum";
    case ParamType::kList: return "list";
  }
  return "?";
}

std::string param_text(const ParamSpec &spec, bool *from_env) {
  const char *env = getenv(env_name(spec).c_str());
  bool set = env != nullptr && env[0] != '\0';
  if (from_env != nullptr) *from_env = set;
  return set ? env : spec.default_value;
}

Status parse_bool(std::string_view what, std::string_view text, bool *out) {
  std::string t = lower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") {
    *out = true;
  } else if (t == "0" || t == "false" || t == "no" || t == "off") {
    *out = false;
  } else {
    return bad(what, text, "expected a boolean (1/0, true/false, yes/no, on/off)");
  }
  return COHORT_SUCCESS;
}

// "an integer from 64 to 1073741824, a power of two", "a number of at least 0.001", ...
std::string range_text(const char *kind, const ParamRange &range) {
  std::string text = kind;
  if (range.min > kNoMin && range.max < kNoMax) {
    text += strprintf(" from %.15g to %.15g", range.min, range.max);
  } else if (range.min > kNoMin) {
    text += strprintf(" of at least %.15g", range.min);
  } else if (range.max < kNoMax) {
    text += strprintf(" of at most %.15g", range.max);
  }
  return range.power_of_two ? text + ", a power of two" : text;
}

Status parse_int(std::string_view what, std::string_view text, const ParamRange &range,
                 int64_t *out) {
  std::string t(text);
  char *end = nullptr;
  errno = 0;
  long long v = strtoll(t.c_str(), &end, 10);
  std::string expected = "expected " + range_text("an integer", range);
  if (t.empty() || *end != '\0' || errno == ERANGE) return bad(what, text, expected.c_str());
  bool in_range = static_cast<double>(v) >= range.min && static_cast<double>(v) <= range.max;
  if (!in_range || (range.power_of_two && (v <= 0 || (v & (v - 1)) != 0))) {
    return bad(what, text, ("must be " + range_text("an integer", range)).c_str());
  }
  *out = v;
  return COHORT_SUCCESS;
}

Status parse_double(std::string_view what, std::string_view text, const ParamRange &range,
                    double *out) {
  std::string t(text);
  char *end = nullptr;
  errno = 0;
  double v = strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    return bad(what, text, ("expected " + range_text("a number", range)).c_str());
  }
  if (v < range.min || v > range.max) {
    return bad(what, text, ("must be " + range_text("a number", range)).c_str());
  }
  *out = v;
  return COHORT_SUCCESS;
}

Status parse_enum(std::string_view what, std::string_view text, std::string_view choices,
                  int *out) {
  std::vector<std::string_view> words = split(choices, ",");
  for (size_t i = 0; i < words.size(); ++i) {
    if (lower(words[i]) == lower(text)) {
      *out = static_cast<int>(i);
      return COHORT_SUCCESS;
    }
  }
  return bad(
      what, text,
      strprintf("expected one of %.*s", static_cast<int>(choices.size()), choices.data()).c_str());
}

Status parse_list(std::string_view what, std::string_view text, std::string_view choices,
                  uint64_t *out) {
  bool invert = !text.empty() && text.front() == '^';
  std::string_view items = invert ? text.substr(1) : text;
  std::vector<std::string_view> words = split(choices, ",");
  uint64_t all = words.size() >= 64 ? ~0ull : (1ull << words.size()) - 1;
  uint64_t mask = 0;
  for (std::string_view item : split(items, ",")) {
    if (lower(item) == "all") {
      mask = all;
      continue;
    }
    int index = -1;
    Status s = parse_enum(what, item, choices, &index);
    if (is_error(s)) {
      return bad(what, text,
                 strprintf("'%.*s' is not one of %.*s", static_cast<int>(item.size()), item.data(),
                           static_cast<int>(choices.size()), choices.data())
                     .c_str());
    }
    mask |= 1ull << index;
  }
  *out = invert ? (all & ~mask) : mask;
  return COHORT_SUCCESS;
}

namespace {

// The parser of each getter's type, with the bounds or choices `spec` gives it.
Status parse_value(const ParamSpec &, std::string_view what, std::string_view text, bool *out) {
  return parse_bool(what, text, out);
}
Status parse_value(const ParamSpec &spec, std::string_view what, std::string_view text,
                   int64_t *out) {
  return parse_int(what, text, spec.range, out);
}
Status parse_value(const ParamSpec &spec, std::string_view what, std::string_view text,
                   double *out) {
  return parse_double(what, text, spec.range, out);
}
Status parse_value(const ParamSpec &, std::string_view, std::string_view text, std::string *out) {
  *out = text;
  return COHORT_SUCCESS;
}
Status parse_value(const ParamSpec &spec, std::string_view what, std::string_view text, int *out) {
  return parse_enum(what, text, spec.choices, out);
}
Status parse_value(const ParamSpec &spec, std::string_view what, std::string_view text,
                   uint64_t *out) {
  return parse_list(what, text, spec.choices, out);
}

// The effective value of parameter `name`, which must be registered as `type`.
template <typename T>
Status get(const char *name, ParamType type, T *out) {
  const ParamSpec *spec = param_find(name);
  if (spec == nullptr || spec->type != type) {
    return failf(COHORT_ERR_INTERNAL, "parameter COHORT_%s is not registered as %s", name,
                 param_type_name(type));
  }
  return parse_value(*spec, env_name(*spec), param_text(*spec), out);
}

}  // namespace

Status param_bool(const char *name, bool *out) { return get(name, ParamType::kBool, out); }
Status param_int(const char *name, int64_t *out) { return get(name, ParamType::kInt, out); }
Status param_double(const char *name, double *out) { return get(name, ParamType::kDouble, out); }
Status param_string(const char *name, std::string *out) {
  return get(name, ParamType::kString, out);
}
Status param_enum(const char *name, int *out) { return get(name, ParamType::kEnum, out); }
Status param_list(const char *name, uint64_t *out) { return get(name, ParamType::kList, out); }

namespace {

// The parse error of `spec`'s value in the environment, or empty.  Strings take any text.
std::string value_problem(const ParamSpec &spec) {
  Status s = COHORT_SUCCESS;
  bool b;
  int64_t i;
  double d;
  int e;
  uint64_t m;
  switch (spec.type) {
    case ParamType::kBool: s = param_bool(spec.name, &b); break;
    case ParamType::kInt: s = param_int(spec.name, &i); break;
    case ParamType::kDouble: s = param_double(spec.name, &d); break;
    case ParamType::kEnum: s = param_enum(spec.name, &e); break;
    case ParamType::kList: s = param_list(spec.name, &m); break;
    case ParamType::kString: break;
  }
  if (!is_error(s)) return "";
  // The parsers say "COHORT_X='text': why"; the problem keeps the why.
  const std::string &detail = last_error();
  size_t colon = detail.find("': ");
  return colon == std::string::npos ? detail : detail.substr(colon + 3);
}

bool is_script_variable(std::string_view name) {
  for (const ScriptVariable &v : kScriptVariables) {
    std::string_view pattern = v.name;
    bool any_ending = !pattern.empty() && pattern.back() == '*';
    if (any_ending ? name.starts_with(pattern.substr(0, pattern.size() - 1)) : name == pattern) {
      return true;
    }
  }
  return false;
}

// Edit distance between a and b (case-insensitive): how far a typo is from a name.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = tolower(static_cast<unsigned char>(a[i - 1])) ==
                  tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Whether one name begins the other, or ends it at a word ('_') boundary: COHORT_P2P for
// P2P_LEVEL, COHORT_COLL_ALGORITHM for COLL_ALGO, COHORT_ALGO for COLL_ALGO.
bool shares_words(std::string_view typed, std::string_view name) {
  auto cut_of = [](std::string_view longer, std::string_view shorter) {
    if (shorter.size() < 3 || shorter.size() >= longer.size()) return false;
    const bool head = longer.starts_with(shorter);
    const bool tail =
        longer.ends_with(shorter) && longer[longer.size() - shorter.size() - 1] == '_';
    return head || tail;
  };
  return cut_of(typed, name) || cut_of(name, typed);
}

// "did you mean COHORT_X?" for the registered names near `name`: those it shares whole words
// with, else the nearest by edit distance when one is near.
std::string unknown_name_message(std::string_view name) {
  const std::string_view typed = name.substr(7);
  std::vector<std::string> near_names;
  const ParamSpec *best = nullptr;
  size_t best_distance = 0;
  for (const std::vector<ParamSpec> *table : {&kParams, &kTestingParams}) {
    for (const ParamSpec &spec : *table) {
      if (shares_words(typed, spec.name)) near_names.push_back(std::string("COHORT_") + spec.name);
      size_t distance = edit_distance(typed, spec.name);
      if (best == nullptr || distance < best_distance) {
        best = &spec;
        best_distance = distance;
      }
    }
  }
  if (near_names.empty() && best_distance <= std::max<size_t>(2, strlen(best->name) / 3)) {
    near_names.push_back(std::string("COHORT_") + best->name);
  }
  std::string message = "no such Cohort parameter";
  for (size_t i = 0; i < near_names.size() && i < 3; ++i) {
    message += (i == 0 ? "; did you mean " : " or ") + near_names[i];
  }
  if (!near_names.empty()) message += "?";
  return message + " (cohort_info --params lists them)";
}

}  // namespace

const std::vector<ScriptVariable> &script_variable_table() { return kScriptVariables; }

std::vector<ParamProblem> params_check_env() {
  std::vector<ParamProblem> problems;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text = *entry;
    size_t equals = text.find('=');
    std::string_view name = text.substr(0, equals);
    std::string value(equals == std::string_view::npos ? "" : text.substr(equals + 1));
    if (!name.starts_with("COHORT_") || is_script_variable(name)) continue;
    const ParamSpec *spec = param_find(name);
    std::string message = spec == nullptr ? unknown_name_message(name) : value_problem(*spec);
    if (!message.empty()) problems.push_back({std::string(name), value, message});
  }
  clear_last_error();
  std::sort(problems.begin(), problems.end(),
            [](const ParamProblem &a, const ParamProblem &b) { return a.variable < b.variable; });
  return problems;
}

Status params_validate_env() {
  std::string bad_values, unknown;
  for (const ParamProblem &p : params_check_env()) {
    std::string line = p.variable + "='" + p.value + "': " + p.message;
    std::string &list = param_find(p.variable) != nullptr ? bad_values : unknown;
    list += (list.empty() ? "" : "; ") + line;
  }
  static std::once_flag warned;
  if (!unknown.empty()) {
    std::call_once(warned, [&] { COHORT_LOG_WARN(PARAM, "ignoring %s", unknown.c_str()); });
  }
  if (bad_values.empty()) return COHORT_SUCCESS;
  return failf(COHORT_ERR_INVALID_ARG, "%s (cohort_info --params checks every setting)",
               bad_values.c_str());
}

}  // namespace cohort
