#include "core/status.h"

#include <cstdarg>
#include <cstdio>

namespace cohort {
namespace {

thread_local std::string t_last_error;

std::string vstrprintf(const char *fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, ap);
  return out;
}

}  // namespace

Status fail(Status status, std::string detail) {
  t_last_error = std::move(detail);
  return status;
}

Status failf(Status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  t_last_error = vstrprintf(fmt, ap);
  va_end(ap);
  return status;
}

void clear_last_error() { t_last_error.clear(); }

const std::string &last_error() { return t_last_error; }

std::string strprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string out = vstrprintf(fmt, ap);
  va_end(ap);
  return out;
}

}  // namespace cohort

extern "C" {

const char *cohort_status_string(cohort_status_t status) {
  switch (status) {
    case COHORT_SUCCESS: return "COHORT_SUCCESS";
    case COHORT_IN_PROGRESS: return "COHORT_IN_PROGRESS";
    case COHORT_ERR_INVALID_ARG: return "COHORT_ERR_INVALID_ARG";
    case COHORT_ERR_INVALID_USAGE: return "COHORT_ERR_INVALID_USAGE";
    case COHORT_ERR_NOT_SUPPORTED: return "COHORT_ERR_NOT_SUPPORTED";
    case COHORT_ERR_NO_MEMORY: return "COHORT_ERR_NO_MEMORY";
    case COHORT_ERR_SYSTEM: return "COHORT_ERR_SYSTEM";
    case COHORT_ERR_MPI: return "COHORT_ERR_MPI";
    case COHORT_ERR_CUDA: return "COHORT_ERR_CUDA";
    case COHORT_ERR_TIMEOUT: return "COHORT_ERR_TIMEOUT";
    case COHORT_ERR_ABORTED: return "COHORT_ERR_ABORTED";
    case COHORT_ERR_INTERNAL: return "COHORT_ERR_INTERNAL";
    default: break;  // any other int, the range sentinels included
  }
  return "COHORT_ERR_UNKNOWN_STATUS";
}

const char *cohort_last_error(void) { return cohort::last_error().c_str(); }

int cohort_version(void) { return COHORT_VERSION_CODE; }

}  // extern "C"
