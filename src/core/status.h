// Status codes and the thread-local error detail behind cohort_last_error().
#pragma once

#include <exception>
#include <new>
#include <string>

#include "cohort.h"

namespace cohort {

using Status = cohort_status_t;

inline bool is_error(Status s) { return s < 0; }

// Records `detail` as this thread's last error and returns `status`, so that a failing
// path reads `return fail(COHORT_ERR_INVALID_ARG, "comm is MPI_COMM_NULL");`.
Status fail(Status status, std::string detail);

// printf-style form of fail().
Status failf(Status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void clear_last_error();
const std::string &last_error();

// printf into a std::string.
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Runs `body` and returns its status, an exception turned into one that `what` names (an
// allocation failure is COHORT_ERR_NO_MEMORY): exceptions never cross the C API, and a
// creation phase's failure travels in its record like any other error.
template <typename Body>
Status guarded(const char *what, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return failf(COHORT_ERR_NO_MEMORY, "%s: out of host memory", what);
  } catch (const std::exception &e) {
    return failf(COHORT_ERR_INTERNAL, "%s: %s", what, e.what());
  } catch (...) {
    return failf(COHORT_ERR_INTERNAL, "%s: unknown exception", what);
  }
}

}  // namespace cohort
