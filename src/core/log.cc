#include "core/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>

#include "core/params.h"

namespace cohort {
namespace {

struct LogState {
  std::mutex mutex;
  std::atomic<bool> loaded{false};
  std::atomic<LogLevel> level{LogLevel::kWarn};
  std::atomic<uint64_t> subsys{~0ull};
  FILE *out = stderr;
  char host[64] = "?";
};

LogState &state() {
  static LogState *s = new LogState();  // never destroyed: logging works during exit
  return *s;
}

std::atomic<int> g_rank{-1};

int rank_from_launcher() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK"}) {
    const char *v = getenv(var);
    if (v != nullptr && v[0] != '\0') return atoi(v);
  }
  return -1;
}

void load_locked(LogState &s) {
  gethostname(s.host, sizeof(s.host) - 1);
  int level = 1;
  if (is_error(param_enum("DEBUG", &level))) {
    fprintf(stderr, "cohort: %s; using WARN\n", last_error().c_str());
    level = 1;
  }
  s.level = static_cast<LogLevel>(level);
  uint64_t subsys = ~0ull;
  if (is_error(param_list("DEBUG_SUBSYS", &subsys))) {
    fprintf(stderr, "cohort: %s; logging all subsystems\n", last_error().c_str());
    subsys = ~0ull;
  }
  s.subsys = subsys;
  if (s.out != stderr) fclose(s.out);
  s.out = stderr;
  std::string file;
  param_string("DEBUG_FILE", &file);
  if (!file.empty()) {
    std::string path = log_expand_path(file, s.host, getpid());
    FILE *f = fopen(path.c_str(), "a");
    if (f == nullptr) {
      fprintf(stderr, "cohort: cannot open COHORT_DEBUG_FILE '%s'; logging to stderr\n",
              path.c_str());
    } else {
      setvbuf(f, nullptr, _IOLBF, 0);
      s.out = f;
    }
  }
  if (g_rank.load() < 0) g_rank = rank_from_launcher();
  s.loaded = true;
}

LogState &loaded_state() {
  LogState &s = state();
  if (!s.loaded) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.loaded) load_locked(s);
  }
  return s;
}

const char *level_name(LogLevel level) {
  static const char *names[] = {"", "WARN", "INFO", "TRACE"};  // by LogLevel; kNone logs nothing
  auto index = static_cast<size_t>(level);
  return index < std::size(names) ? names[index] : "";
}

const char *subsys_name(uint64_t subsys) {
  static const char *names[] = {"INIT", "PARAM", "OOB", "TOPO", "GRAPH", "COLL", "NET"};
  for (int i = 0; i < 7; ++i) {
    if (subsys & (1ull << i)) return names[i];
  }
  return "?";
}

}  // namespace

bool log_enabled(LogLevel level, uint64_t subsys) {
  LogState &s = loaded_state();
  return level <= s.level && (s.subsys & subsys) != 0;
}

void log_write(LogLevel level, uint64_t subsys, const char *fmt, ...) {
  LogState &s = loaded_state();
  char message[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(s.mutex);
  fprintf(s.out, "%s:%d:%ld [%d] COHORT %s %s %s\n", s.host, static_cast<int>(getpid()),
          static_cast<long>(syscall(SYS_gettid)), g_rank.load(), level_name(level),
          subsys_name(subsys), message);
}

void log_set_rank(int rank) { g_rank = rank; }

std::string log_expand_path(std::string_view pattern, std::string_view host, long pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    if (c == 'h') {
      out += host;
    } else if (c == 'p') {
      out += std::to_string(pid);
    } else if (c == '%') {
      out += '%';
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

}  // namespace cohort
