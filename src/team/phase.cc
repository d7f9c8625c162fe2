#include "team/phase.h"

#include <cstring>

namespace cohort {

namespace {
const char *const kPhaseNames[] = {"check-in", "peer-info", "local-ranks",  "topology",
                                   "graphs",   "align",     "connect",      "device-setup",
                                   "ready"};
static_assert(sizeof(kPhaseNames) / sizeof(kPhaseNames[0]) == kNumPhases, "every phase named");
}  // namespace

const char *phase_name(Phase phase) {
  int i = static_cast<int>(phase);
  return i >= 0 && i < kNumPhases ? kPhaseNames[i] : "?";
}

Status agreed_failure(const char *what, Phase phase, const std::string &who, Status status,
                      const char *detail) {
  std::string text(detail, strnlen(detail, kDetailBytes));
  return failf(status, "%s failed in phase %s: %s reported %s: %s", what, phase_name(phase),
               who.c_str(), cohort_status_string(status), text.c_str());
}

PhaseHeader phase_header(Phase phase, Status status) {
  PhaseHeader header;
  std::memset(&header, 0, sizeof(header));
  header.magic = kRecordMagic;
  header.phase = static_cast<int32_t>(phase);
  header.status = status;
  if (is_error(status)) std::strncpy(header.detail, last_error().c_str(), kDetailBytes - 1);
  return header;
}

bool phase_from_name(const char *name, Phase *phase) {
  for (int i = 0; i < kNumPhases; ++i) {
    if (strcmp(name, kPhaseNames[i]) == 0) {
      *phase = static_cast<Phase>(i);
      return true;
    }
  }
  return false;
}

}  // namespace cohort
