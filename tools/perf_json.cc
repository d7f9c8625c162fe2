#include "perf_json.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "cohort.h"
#include "core/build_info.h"

namespace cohort::perf {
namespace {

std::string utc_now() {
  const time_t now = time(nullptr);
  struct tm utc;
  gmtime_r(&now, &utc);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

nlohmann::ordered_json json_header(const char *benchmark, const Job &job) {
  nlohmann::ordered_json doc;
  doc["benchmark"] = benchmark;
  doc["tool"] = "cohort_perf";
  doc["version"] = std::to_string(COHORT_VERSION_MAJOR) + "." +
                   std::to_string(COHORT_VERSION_MINOR) + "." +
                   std::to_string(COHORT_VERSION_PATCH);
  doc["git_revision"] = COHORT_GIT_REVISION;
  doc["date"] = utc_now();
  doc["ranks"] = job.ranks;
  doc["hosts"] = job.load.hosts;
  doc["host_load"] = {{"host", job.load.host},
                      {"ranks", job.load.ranks},
                      {"cores", job.load.cores},
                      {"oversubscribed", job.load.oversubscribed()}};
  return doc;
}

double json_rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

bool write_json_file(const std::string &path, const nlohmann::ordered_json &doc) {
  FILE *f = fopen(path.c_str(), "w");
  if (f == nullptr) {
    perror(path.c_str());
    return false;
  }
  const std::string text = doc.dump(2) + "\n";
  const bool written = fputs(text.c_str(), f) >= 0;
  if (fclose(f) == 0 && written) return true;
  fprintf(stderr, "cohort_perf: could not write %s\n", path.c_str());
  return false;
}

}  // namespace cohort::perf
