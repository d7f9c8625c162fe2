// Team-creation phases and the record every rank contributes to a phase's exchange: its
// status for the phase, a detail message, then the phase's payload.
#pragma once

#include <cstdint>

#include <string>

#include "cohort.h"
#include "core/status.h"

namespace cohort {

enum class Phase : int {
  kCheckIn = 0,  // every rank of the communicator arrived; private communicator made
  kPeerInfo,     // host, pid, GPU identity, NUMA of every rank
  kLocalRanks,   // node index, local rank, duplicate-GPU check
  kTopology,     // each host's leader detects (or loads) the host topology and its paths
  kGraphs,       // each host's leader searches rings; hosts exchange their graph summaries
  kAlign,        // every rank builds the plan from all summaries; plan hashes compared
  kConnect,      // each host's leader creates the shared-memory mailboxes; the others attach
  kDeviceSetup,  // ranks with a GPU allocate their windows, export them, map their peers'
  kReady,        // final agreement; carries each rank's phase timings
  kCount
};

constexpr int kNumPhases = static_cast<int>(Phase::kCount);
// Phases shown in the init report (ready is the closing agreement, not a phase of work).
constexpr int kNumReportPhases = static_cast<int>(Phase::kReady);
static_assert(kNumReportPhases <= COHORT_MAX_PHASES, "report has room for every phase");

// The private-communicator channel (tag) of a phase's exchange.
inline int phase_channel(Phase phase) { return static_cast<int>(phase); }

const char *phase_name(Phase phase);
// Phase from its name ("peer-info"); false if unknown.
bool phase_from_name(const char *name, Phase *phase);

constexpr uint32_t kRecordMagic = 0xc0407a11u;
constexpr int kDetailBytes = 1024;

// The error every rank returns when `who` reported `status` in `phase` of `what` ("team
// creation", "split of team 'x'"); `detail` need not be terminated within kDetailBytes.
Status agreed_failure(const char *what, Phase phase, const std::string &who, Status status,
                      const char *detail);

struct PhaseHeader {
  uint32_t magic;
  int32_t phase;
  int32_t status;  // cohort_status_t of this rank's work in the phase
  int32_t reserved;
  char detail[kDetailBytes];
};

// A header for `phase` with `status` and, for an error, last_error() as its detail.
PhaseHeader phase_header(Phase phase, Status status);

// The private-communicator channel of "this rank gave up" notices (a PhaseHeader): never on
// the user's communicator, where a notice could outlive its attempt and spoil the next one.
constexpr int kNoticeChannel = 15;

}  // namespace cohort
