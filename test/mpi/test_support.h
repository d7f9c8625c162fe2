// What the multi-rank test programs share: per-rank checks that count failures, options from
// the command line, a monotonic clock, scoped environment variables, and the main that runs
// one scenario and agrees on the verdict.
#pragma once

#include <mpi.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>

#include "cohort_mpi.h"
#include "cohort.hpp"

namespace mpi_test {

inline int g_rank = 0, g_size = 1, g_failures = 0;
inline bool g_finalized = false;  // set by scenarios that finalise MPI themselves

inline void check_impl(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
inline void check_impl(bool ok, const char *file, int line, const char *fmt, ...) {
  if (ok) return;
  ++g_failures;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "[rank %d] CHECK FAILED %s:%d: %s\n", g_rank, file, line, msg);
}
#define CHECK(cond, ...) mpi_test::check_impl((cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_STATUS(call, expected)                                                             \
  do {                                                                                           \
    cohort_status_t s_ = (call);                                                                 \
    CHECK(s_ == (expected), "%s returned %s, expected %s (%s)", #call, cohort_status_string(s_), \
          cohort_status_string(expected), cohort_last_error());                                  \
  } while (0)

inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The threads of this process now (/proc/self/status), or -1 where that cannot be read.
inline int thread_count() {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int threads = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "Threads: %d", &threads) == 1) break;
  }
  std::fclose(f);
  return threads;
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

inline std::map<std::string, std::string> g_opts;
inline int opt_int(const char *name, int fallback) {
  auto it = g_opts.find(name);
  return it == g_opts.end() ? fallback : atoi(it->second.c_str());
}
inline double opt_double(const char *name, double fallback) {
  auto it = g_opts.find(name);
  return it == g_opts.end() ? fallback : atof(it->second.c_str());
}
inline std::string opt_str(const char *name, const char *fallback) {
  auto it = g_opts.find(name);
  return it == g_opts.end() ? fallback : it->second;
}

// This rank's place among the ranks of its machine (MPI's shared-memory split).
struct Local {
  int rank = 0, size = 1;
};

inline Local local_ranks() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  Local l;
  MPI_Comm_rank(node, &l.rank);
  MPI_Comm_size(node, &l.size);
  MPI_Comm_free(&node);
  return l;
}

inline cohort_team_config_t config_with_timeout(double seconds) {
  cohort_team_config_t cfg;
  cohort_team_config_init(&cfg);
  cfg.init_timeout = seconds;
  return cfg;
}

// True on every rank iff `value` is the same string on every rank of comm.
inline bool same_everywhere(const std::string &value, MPI_Comm comm = MPI_COMM_WORLD) {
  unsigned long long h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : value) h = (h ^ c) * 1099511628211ull;
  unsigned long long lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  return lo == hi;
}

// Sets (or, with value NULL, unsets) an environment variable for a scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    const char *old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

using Scenarios = std::map<std::string, std::function<void()>>;

// Runs argv[1] among `scenarios` (options --name value after it) and returns the exit code:
// 0 when every check on every rank held, 1 otherwise, 2 for a bad command line.  `skip`
// (optional) returns a reason when the scenario cannot run here: exit 77.
int run_main(int argc, char **argv, const Scenarios &scenarios,
             const std::function<std::string(const std::string &)> &skip = nullptr);

}  // namespace mpi_test
