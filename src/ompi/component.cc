#include "component.h"

#include <cstdarg>
#include <cstdio>
#include <string>

namespace cohort::ompi {
namespace {

coll_cohort_params_t g_params = COLL_COHORT_PARAMS_DEFAULT;

void to_stderr(int, const char *text) { std::fprintf(stderr, "%s\n", text); }
coll_cohort_output_fn_t g_output = to_stderr;

}  // namespace

void configure(const coll_cohort_params_t &params, coll_cohort_output_fn_t output) {
  g_params = params;
  g_output = output != nullptr ? output : to_stderr;
  if (!(g_params.init_timeout > 0)) {
    const coll_cohort_params_t defaults = COLL_COHORT_PARAMS_DEFAULT;
    say(kWarning, "coll_cohort_init_timeout must be a positive number of seconds, not %g: using %g",
        g_params.init_timeout, defaults.init_timeout);
    g_params.init_timeout = defaults.init_timeout;
  }
}

const coll_cohort_params_t &params() { return g_params; }

bool shown(int level) { return level <= kWarning || level <= g_params.verbose; }

void say(int level, const char *format, ...) {
  if (!shown(level)) return;
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text = "coll:cohort: ";
  const size_t prefix = text.size();
  text.resize(prefix + static_cast<size_t>(length > 0 ? length : 0) + 1);
  std::vsnprintf(text.data() + prefix, text.size() - prefix, format, again);
  va_end(again);
  text.resize(text.size() - 1);  // the terminating NUL vsnprintf wrote
  g_output(level, text.c_str());
}

}  // namespace cohort::ompi
