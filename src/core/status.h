// Status codes and the thread-local error detail behind cohort_last_error().
#pragma once

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

}  // namespace cohort
