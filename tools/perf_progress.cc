#include "perf_progress.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "core/clock.h"

namespace cohort::perf {
namespace {

constexpr double kAfterS = 1;

struct Line {
  bool enabled = false;
  bool shown = false;
  int64_t start_ns = 0;
};
Line g_line;

}  // namespace

void progress_start(bool enabled) {
  g_line.enabled = enabled && isatty(STDERR_FILENO) == 1;
  g_line.start_ns = now_ns();
}

void progress_show(const std::string &text) {
  const double elapsed_s = (now_ns() - g_line.start_ns) / 1e9;
  if (!g_line.enabled || elapsed_s < kAfterS) return;
  fflush(stdout);
  fprintf(stderr, "\r\033[Kcohort_perf: %s, %.1f s so far", text.c_str(), elapsed_s);
  fflush(stderr);
  g_line.shown = true;
}

void progress_clear() {
  if (!g_line.shown) return;
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
  g_line.shown = false;
}

}  // namespace cohort::perf
