// The one logger.  COHORT_DEBUG picks the level, COHORT_DEBUG_SUBSYS the subsystems,
// COHORT_DEBUG_FILE the destination.  Every line carries host, pid and rank.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cohort {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// Bit order matches the choices of COHORT_DEBUG_SUBSYS in params.cc.
enum LogSubsys : uint64_t {
  kLogINIT = 1u << 0,
  kLogPARAM = 1u << 1,
  kLogOOB = 1u << 2,
  kLogTOPO = 1u << 3,
  kLogGRAPH = 1u << 4,
  kLogCOLL = 1u << 5,
  kLogNET = 1u << 6,
};

bool log_enabled(LogLevel level, uint64_t subsys);
void log_write(LogLevel level, uint64_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// The rank shown in every line (the MPI_COMM_WORLD rank once known).
void log_set_rank(int rank);

// Expands %h (host) and %p (pid) in a COHORT_DEBUG_FILE pattern; %% is a literal %.
std::string log_expand_path(std::string_view pattern, std::string_view host, long pid);

}  // namespace cohort

#define COHORT_LOG_AT(level, subsys, ...)                          \
  do {                                                             \
    if (cohort::log_enabled(level, cohort::kLog##subsys)) {        \
      cohort::log_write(level, cohort::kLog##subsys, __VA_ARGS__); \
    }                                                              \
  } while (0)
#define COHORT_LOG_WARN(subsys, ...) COHORT_LOG_AT(cohort::LogLevel::kWarn, subsys, __VA_ARGS__)
#define COHORT_LOG_INFO(subsys, ...) COHORT_LOG_AT(cohort::LogLevel::kInfo, subsys, __VA_ARGS__)
#define COHORT_LOG_TRACE(subsys, ...) COHORT_LOG_AT(cohort::LogLevel::kTrace, subsys, __VA_ARGS__)
