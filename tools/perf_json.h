// cohort_perf --json: every file starts with the same fields about the run, and is written
// by nlohmann/json, indented (one field per line).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "perf_job.h"

namespace cohort::perf {

// {"benchmark", "tool": "cohort_perf", "version": "0.1.0", "git_revision", "date" (UTC,
// ISO 8601), "ranks", "hosts", "host_load": {"host", "ranks", "cores", "oversubscribed"}}:
// host_load is the host with the most ranks per core (perf_job.h).
nlohmann::ordered_json json_header(const char *benchmark, const Job &job);

// value rounded to `decimals` decimal places, so that the file shows what was measured.
double json_rounded(double value, int decimals);

// Writes doc to path; false (with the reason on stderr) when it cannot.
bool write_json_file(const std::string &path, const nlohmann::ordered_json &doc);

}  // namespace cohort::perf
