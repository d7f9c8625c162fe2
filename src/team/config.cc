#include "team/config.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "core/params.h"

namespace cohort {

Status parse_injected_failure(const std::string &text, InjectedFailure *out) {
  InjectedFailure inject;
  if (text.empty()) {
    *out = inject;
    return COHORT_SUCCESS;
  }
  size_t colon = text.find(':');
  std::string phase = text.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  size_t colon2 = rest.find(':');
  std::string rank = rest.substr(0, colon2);
  bool has_mode = colon2 != std::string::npos;
  std::string mode = has_mode ? rest.substr(colon2 + 1) : "";
  char *end = nullptr;
  errno = 0;
  long r = strtol(rank.c_str(), &end, 10);
  if (!phase_from_name(phase.c_str(), &inject.phase) || rank.empty() || *end != '\0' || r < 0 ||
      errno == ERANGE || r > INT_MAX || (has_mode && mode != "stall" && mode != "skew") ||
      (mode == "skew" && inject.phase != Phase::kAlign)) {
    return failf(
        COHORT_ERR_INVALID_ARG,
        "COHORT_INJECT_FAILURE='%s': expected PHASE:RANK[:stall] or align:RANK:skew, with "
        "PHASE one of "
        "check-in, peer-info, local-ranks, topology, graphs, align, connect, device-setup, ready",
        text.c_str());
  }
  inject.active = true;
  inject.rank = static_cast<int>(r);
  inject.stall = mode == "stall";
  inject.skew = mode == "skew";
  *out = inject;
  return COHORT_SUCCESS;
}

Status resolve_config(const cohort_team_config_t *config, TeamConfig *out) {
  TeamConfig cfg;
  Status s = param_double("INIT_TIMEOUT", &cfg.init_timeout_s);
  // The caller's timeout and name hold even when something else is wrong, so that this rank
  // waits and logs like the others while it reports the error.
  bool readable = config != nullptr && config->magic == COHORT_TEAM_CONFIG_MAGIC &&
                  config->size >= sizeof(cohort_team_config_t);
  if (readable && config->init_timeout > 0) cfg.init_timeout_s = config->init_timeout;
  if (readable && config->name != nullptr) cfg.name = config->name;
  *out = cfg;
  // Every bad setting at once, COHORT_INIT_TIMEOUT's among them: a job names them all.
  if (Status all = params_validate_env(); is_error(all)) return all;
  if (is_error(s)) return s;
  std::string inject;
  param_string("INJECT_FAILURE", &inject);
  if (s = parse_injected_failure(inject, &cfg.inject); is_error(s)) return s;
  param_bool("ALLOW_SHARED_GPU", &cfg.allow_shared_gpu);
  if (config != nullptr) {
    if (config->magic != COHORT_TEAM_CONFIG_MAGIC) {
      return failf(COHORT_ERR_INVALID_ARG,
                   "config->magic is 0x%x, not COHORT_TEAM_CONFIG_MAGIC: initialise the config "
                   "with cohort_team_config_init() or COHORT_TEAM_CONFIG_INITIALIZER",
                   config->magic);
    }
    if (config->size < sizeof(cohort_team_config_t)) {
      return failf(COHORT_ERR_INVALID_ARG, "config->size is %zu, expected %zu", config->size,
                   sizeof(cohort_team_config_t));
    }
    if (std::isnan(config->init_timeout) || config->init_timeout == 0) {
      return failf(COHORT_ERR_INVALID_ARG,
                   "config->init_timeout=%g: give seconds > 0, or < 0 for COHORT_INIT_TIMEOUT",
                   config->init_timeout);
    }
    if (config->init_timeout > 0) cfg.init_timeout_s = config->init_timeout;
    if (config->cuda_device < COHORT_DEVICE_ACTIVE) {
      return failf(COHORT_ERR_INVALID_ARG,
                   "config->cuda_device=%d: give an ordinal, COHORT_DEVICE_CURRENT, "
                   "COHORT_DEVICE_NONE or COHORT_DEVICE_ACTIVE",
                   config->cuda_device);
    }
    cfg.cuda_device = config->cuda_device;
    if (config->allow_shared_gpu > 1) {
      return failf(COHORT_ERR_INVALID_ARG, "config->allow_shared_gpu=%d: give 0, 1 or -1",
                   config->allow_shared_gpu);
    }
    if (config->allow_shared_gpu >= 0) cfg.allow_shared_gpu = config->allow_shared_gpu == 1;
    if (config->name != nullptr) cfg.name = config->name;
  }
  *out = cfg;
  return COHORT_SUCCESS;
}

}  // namespace cohort

extern "C" cohort_status_t cohort_team_config_init(cohort_team_config_t *config) {
  if (config == nullptr) return cohort::fail(COHORT_ERR_INVALID_ARG, "config is NULL");
  *config = COHORT_TEAM_CONFIG_INITIALIZER;
  return COHORT_SUCCESS;
}
