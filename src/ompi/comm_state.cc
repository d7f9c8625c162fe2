#include "ompi/comm_state.h"

#include <atomic>
#include <mutex>
#include <set>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"

namespace cohort::ompi {
namespace {

coll_cohort_params_t g_params = {1, 40, 0, 0, "all"};
thread_local int t_busy = 0;
std::atomic<int> g_ordinal{0};

// Every state alive, so MPI_Finalize can close those whose communicator outlives it
// (MPI_COMM_WORLD's module is released only after the PML is gone).
struct Registry {
  std::mutex mutex;
  std::set<CommState *> live;
  bool hook = false;
};
Registry &registry() {
  static Registry *r = new Registry;  // never destroyed: module destructors may run at exit
  return *r;
}

// Attributes of MPI_COMM_SELF are deleted first thing in MPI_Finalize, with MPI fully usable.
int close_all_at_finalize(MPI_Comm, int, void *, void *) {
  std::set<CommState *> live;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    live = registry().live;
  }
  for (CommState *state : live) state->close();
  return MPI_SUCCESS;
}

void install_finalize_hook() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  if (registry().hook) return;
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, close_all_at_finalize, &keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  registry().hook = true;
}

void say(const char *fmt, const char *a, const char *b, const char *c) {
  log_write(LogLevel::kInfo, kLogCOLL, fmt, a, b, c);
}

}  // namespace

const coll_cohort_params_t &params() { return g_params; }
void set_params(const coll_cohort_params_t &p) { g_params = p; }

BusyScope::BusyScope() { ++t_busy; }
BusyScope::~BusyScope() { --t_busy; }
bool busy() { return t_busy > 0; }

CommState::CommState(MPI_Comm comm) : comm_(comm), ordinal_(g_ordinal++) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().live.insert(this);
}

CommState::~CommState() {
  close();
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().live.erase(this);
}

std::string CommState::name() const {
  char text[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  if (team_state_ != TeamState::kClosed) MPI_Comm_get_name(comm_, text, &length);
  if (length > 0) return text;
  return "communicator #" + std::to_string(ordinal_);
}

cohort_team_t CommState::team(Coll coll) {
  if (team_state_ == TeamState::kNone) create_team(coll);
  return team_state_ == TeamState::kReady ? team_ : nullptr;
}

// The private duplicate: collective over the communicator, so a rank that never makes the
// call that creates the team would hold the others here, where Open MPI has no timeout.  The
// wait is nonblocking, and every COHORT_INIT_TIMEOUT seconds it says where it is stuck.
bool CommState::duplicate(const std::string &label, Coll coll) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Comm_idup(comm_, &dup_, &request) != MPI_SUCCESS) {
    COHORT_LOG_WARN(COLL,
                    "coll/cohort: MPI_Comm_idup of %s failed: its collectives stay with "
                    "Open MPI's modules",
                    label.c_str());
    dup_ = MPI_COMM_NULL;
    return false;
  }
  double timeout = 300;
  param_double("COHORT_INIT_TIMEOUT", &timeout);
  const int64_t start = now_ns();
  int64_t next_warning = deadline_after(timeout);
  Backoff backoff;
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (now_ns() >= next_warning) {
      int size = 0;
      MPI_Comm_size(comm_, &size);
      COHORT_LOG_WARN(COLL,
                      "coll/cohort: %s, the first Cohort collective on %s (%d ranks), has "
                      "waited %.0f s for every rank to join its team's communicator: a rank has "
                      "not made this call (still waiting)",
                      coll_mpi_name(coll), label.c_str(), size, (now_ns() - start) / 1e9);
      next_warning = deadline_after(timeout);
    }
    backoff.pause();
  }
}

void CommState::create_team(Coll coll) {
  BusyScope busy;  // the duplicate's own selection and its allreduce stay out of Cohort
  install_finalize_hook();
  int64_t start = now_ns();
  std::string label = name();
  team_state_ = TeamState::kUnavailable;
  if (!duplicate(label, coll)) return;
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  config.name = label.c_str();
  config.cuda_device = team_cuda_device(memory_type_detector());
  cohort_status_t status = cohort_team_create_mpi(dup_, &config, &team_);
  if (status != COHORT_SUCCESS) {
    // Every rank ends creation with the same status, so all fall back alike.
    COHORT_LOG_WARN(COLL,
                    "coll/cohort: no Cohort team on %s: %s (%s); its collectives stay with "
                    "Open MPI's modules",
                    label.c_str(), cohort_status_string(status), cohort_last_error());
    if (team_ != nullptr) cohort_team_destroy(team_);
    team_ = nullptr;
    MPI_Comm_free(&dup_);
    return;
  }
  team_state_ = TeamState::kReady;
  if (params().verbose >= 1) {
    int size = 0;
    MPI_Comm_size(comm_, &size);
    log_write(LogLevel::kInfo, kLogCOLL, "coll/cohort: team for %s (%d ranks) ready in %.3f ms",
              label.c_str(), size, (now_ns() - start) / 1e6);
  }
}

int CommState::fall_back(Coll coll, Fallback reason, const char *detail) {
  long &n = counts_[static_cast<int>(coll)].fallback[static_cast<int>(reason)];
  ++n;
  if (params().verbose >= 3 || (params().verbose >= 2 && n == 1)) {
    say("coll/cohort: %s falls back to Open MPI: %s%s", coll_mpi_name(coll), fallback_text(reason),
        detail != nullptr ? (std::string(" (") + detail + ")").c_str() : "");
  }
  return 0;
}

int CommState::finish(Coll coll, cohort_status_t status, int *rc) {
  if (status == COHORT_SUCCESS) {
    ++counts_[static_cast<int>(coll)].cohort;
    if (params().verbose >= 3)
      say("coll/cohort: %s ran on Cohort%s%s", coll_mpi_name(coll), "", "");
    *rc = MPI_SUCCESS;
    return 1;
  }
  // Argument checks come before any traffic and give the same answer on every rank.
  if (status == COHORT_ERR_INVALID_ARG || status == COHORT_ERR_NOT_SUPPORTED) {
    return fall_back(coll, Fallback::kRefused, cohort_last_error());
  }
  failed_ = true;
  COHORT_LOG_WARN(COLL,
                  "coll/cohort: %s on %s failed in Cohort: %s (%s); later collectives on it "
                  "fall back to Open MPI's modules",
                  coll_mpi_name(coll), name().c_str(), cohort_status_string(status),
                  cohort_last_error());
  *rc = MPI_ERR_OTHER;
  return 1;
}

void CommState::report() const {
  std::string text;
  for (int c = 0; c < kNumColls; ++c) {
    const Counts &counts = counts_[c];
    long fallbacks = 0;
    for (long n : counts.fallback) fallbacks += n;
    if (counts.cohort == 0 && fallbacks == 0) continue;
    text += std::string("; ") + coll_mpi_name(static_cast<Coll>(c)) + " " +
            std::to_string(counts.cohort) + " on Cohort";
    for (int r = 0; r < kNumFallbacks; ++r) {
      if (counts.fallback[r] == 0) continue;
      text += ", " + std::to_string(counts.fallback[r]) + " fell back (" +
              fallback_text(static_cast<Fallback>(r)) + ")";
    }
  }
  if (text.empty()) {
    if (params().verbose < 2) return;  // communicators that saw no collective stay quiet
    text = "; no collectives";
  }
  log_write(LogLevel::kInfo, kLogCOLL, "coll/cohort: %s: %s", name().c_str(), text.c_str() + 2);
}

void CommState::close() {
  if (team_state_ == TeamState::kClosed) return;
  if (params().verbose >= 1) report();
  if (team_ != nullptr) cohort_team_destroy(team_);
  team_ = nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (dup_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&dup_);
  dup_ = MPI_COMM_NULL;
  team_state_ = TeamState::kClosed;
}

}  // namespace cohort::ompi
