#include "comm_state.h"

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <set>

#include "component.h"

namespace cohort::ompi {
namespace {

thread_local int t_busy = 0;
std::atomic<int> g_ordinal{0};

// Every state alive, so MPI_Finalize can close those whose communicator outlives it
// (MPI_COMM_WORLD's module is released only after the PML is gone).
struct Registry {
  std::mutex mutex;
  std::set<CommState *> live;
};
Registry &registry() {
  static Registry *r = new Registry;  // never destroyed: module destructors may run at exit
  return *r;
}

int close_all_at_finalize(MPI_Comm, int, void *, void *) {
  std::set<CommState *> live;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    live = registry().live;
  }
  for (CommState *state : live) state->close();
  return MPI_SUCCESS;
}

// Attributes of MPI_COMM_SELF are deleted first thing in MPI_Finalize, with MPI fully usable.
// (Cohort's own lingering work uses the same trick inside the library; the component sees only
// its public API, so it keeps these few lines of its own.)
void install_finalize_hook() {
  static std::once_flag once;
  std::call_once(once, [] {
    int keyval = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, close_all_at_finalize, &keyval, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  });
}

double seconds_since(const timespec &start) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
}

// Between polls of a wait: the core is yielded for the first millisecond (a wait whose ranks
// are all there ends in that time), then each poll sleeps 100 us, so a rank late by minutes
// costs the waiting ones almost no CPU.
void pause_between_polls(double waited_seconds) {
  if (waited_seconds < 1e-3) {
    sched_yield();
    return;
  }
  const timespec pause = {0, 100000};
  nanosleep(&pause, nullptr);
}

}  // namespace

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

// Asked at the first call: while Open MPI enables its modules the communicator is not yet one
// MPI calls accept.
void CommState::learn_shape() {
  if (size_ > 0) return;
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

cohort_team_t CommState::team(CallId call) {
  if (team_state_ == TeamState::kNone) create_team(call);
  return team_state_ == TeamState::kReady ? team_ : nullptr;
}

// The private duplicate: collective over the communicator, so a rank that never makes the
// call that creates the team would hold the others here, where Open MPI has no timeout.  The
// wait is nonblocking, and every coll_cohort_init_timeout seconds it says where it is stuck.
bool CommState::duplicate(const std::string &label, CallId call) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Comm_idup(comm_, &dup_, &request) != MPI_SUCCESS) {
    say(kWarning, "MPI_Comm_idup of %s failed: its collectives stay with Open MPI's modules",
        label.c_str());
    dup_ = MPI_COMM_NULL;
    return false;
  }
  wait_for_all(&request, call, "join its team's communicator");
  return true;
}

// Open MPI has no timeout: a rank that never makes the call would hold the others silently.
// The wait polls, and every coll_cohort_init_timeout seconds says where it is stuck.
void CommState::wait_for_all(MPI_Request *request, CallId call, const char *what) {
  const double interval = params().init_timeout;
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (double next_warning = interval;;) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    const double waited = seconds_since(start);
    if (waited >= next_warning) {
      say(kWarning,
          "%s on %s (%d ranks) has waited %.0f s for every rank to %s: a rank has not made this "
          "call (still waiting)",
          call.name(), name().c_str(), size(), waited, what);
      next_warning = waited + interval;
    }
    pause_between_polls(waited);
  }
}

void CommState::create_team(CallId call) {
  BusyScope busy;  // the duplicate's own selection and its allreduce stay out of Cohort
  install_finalize_hook();
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  std::string label = name();
  team_state_ = TeamState::kUnavailable;
  if (!duplicate(label, call)) return;
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  config.name = label.c_str();
  config.init_timeout = params().init_timeout;
  // The thread's current GPU when the application uses one, none in a CPU-only program (which
  // must not bind every rank of a GPU node to GPU 0).
  config.cuda_device = COHORT_DEVICE_ACTIVE;
  cohort_status_t status = cohort_team_create_mpi(dup_, &config, &team_);
  if (status != COHORT_SUCCESS) {
    // Every rank ends creation with the same status, so all fall back alike.
    say(kWarning, "no Cohort team on %s: %s (%s); its collectives stay with Open MPI's modules",
        label.c_str(), cohort_status_string(status), cohort_last_error());
    if (team_ != nullptr) cohort_team_destroy(team_);
    team_ = nullptr;
    MPI_Comm_free(&dup_);
    return;
  }
  team_state_ = TeamState::kReady;
  if (shown(kSummary)) {
    say(kSummary, "team for %s (%d ranks) ready in %.3f ms", label.c_str(), size(),
        seconds_since(start) * 1e3);
  }
}

int CommState::mpi_max(CallId call, int mine) {
  BusyScope busy;  // Open MPI's module runs it
  agreeing_ = true;
  int all = mine;
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MAX, comm_, &request) == MPI_SUCCESS) {
    wait_for_all(&request, call, "agree on the memory kind");
  }
  agreeing_ = false;
  return all;
}

bool CommState::all_on_device(CallId call, const coll_cohort_args_t &args, bool mine) {
  if (memory_ == Memory::kUnknown) {
    int devices = 0;
    cohort_cuda_device_count(&devices);
    memory_ = mpi_max(call, devices > 0 ? 1 : 0) ? Memory::kGpu : Memory::kHostOnly;
  }
  const bool uniform = params().uniform_memory;
  if (memory_ == Memory::kHostOnly || (uniform && team_state_ != TeamState::kReady)) return mine;
  const int key = RouteMemo::key(args.kind, uniform_bytes(args, MPI_Type_size));
  if (std::optional<bool> known = routes_.recall(key)) return uniform ? mine : *known;
  // Any rank off the GPU (1) sends every rank to the host route.  Over the team once it
  // exists; before, over Open MPI, so that no team is made for calls that stay there.
  const int off = mine ? 0 : 1;
  if (team_state_ != TeamState::kReady) {
    const bool all = mpi_max(call, off) == 0;
    routes_.learn(key, all);
    return all;
  }
  // [0]: some rank is off the GPU (never asked under uniform memory); [1]: some rank has
  // something for the registration cache's sync.  A team that a failure aborted fails this on
  // every rank alike (the abort reaches each), so every rank takes the host route, where its
  // calls on Cohort fail too.
  int ours[2] = {uniform ? 0 : off, 0}, any[2] = {0, 0};
  cohort_mem_cache_wanted(team_, &ours[1]);
  BusyScope busy;
  if (cohort_allreduce(team_, ours, any, 2, COHORT_INT32, COHORT_MAX) != COHORT_SUCCESS) {
    say(failed_ ? kEveryCall : kWarning,
        "%s on %s: agreeing on the memory kind failed in Cohort: %s", call.name(), name().c_str(),
        cohort_last_error());
    if (!failed_) abort_team();
    return false;
  }
  if (any[1] != 0 && !sync_cache(call)) return false;
  const bool all = uniform ? mine : any[0] == 0;
  // A sync asks again at the next call: more buffers may be waiting.
  routes_.learn(key, uniform || all, any[1] == 0);
  return all;
}

bool CommState::sync_cache(CallId call) {
  ++cache_syncs_;
  if (cohort_mem_cache_sync(team_) == COHORT_SUCCESS) return true;
  say(failed_ ? kEveryCall : kWarning, "%s on %s: the registration cache's sync failed: %s",
      call.name(), name().c_str(), cohort_last_error());
  if (!failed_) abort_team();
  return false;
}

void CommState::note_cached(CallId call, const void *const *buffers, const size_t *bytes, int n) {
  cohort_team_t team = ready_team();
  if (team == nullptr || failed_) return;
  bool all = n > 0;
  for (int i = 0; i < n; ++i) {
    int registered = 0;
    cohort_mem_cache_note(team, buffers[i], bytes[i], &registered);
    all = all && registered != 0;
  }
  if (all) ++counts_[call.index()].cached;
}

int CommState::fall_back(CallId call, Fallback reason, const char *detail) {
  long &n = counts_[call.index()].fallback[static_cast<int>(reason)];
  ++n;
  const int level = n == 1 ? kFirstFallback : kEveryCall;
  if (shown(level)) {
    say(level, "%s falls back to Open MPI: %s%s%s%s", call.name(), fallback_text(reason),
        detail != nullptr ? " (" : "", detail != nullptr ? detail : "",
        detail != nullptr ? ")" : "");
  }
  return 0;
}

void CommState::staged(CallId call, StagedTo to, size_t bytes, const char *why) {
  long &n = counts_[call.index()].staged[static_cast<int>(to)];
  ++n;
  const int level = n == 1 ? kFirstFallback : kEveryCall;
  if (shown(level)) {
    static constexpr const char *kHow[kNumStagedTo][2] = {
        {"device memory through host memory", "Cohort's host path"},
        {"device memory through host memory", "Open MPI"},
        {"host memory onto the GPU", "Cohort's GPU path"}};
    const auto how = kHow[static_cast<int>(to)];
    say(level, "%s staged %zu bytes of %s to run on %s: %s", call.name(), bytes, how[0], how[1],
        why != nullptr ? why : "?");
  }
}

void CommState::packed(CallId call, size_t bytes) {
  long &n = counts_[call.index()].packed;
  ++n;
  const int level = n == 1 ? kFirstFallback : kEveryCall;
  if (shown(level)) {
    say(level,
        "%s packed %zu bytes of a datatype with gaps on this rank (MPI_Pack) to run on Cohort",
        call.name(), bytes);
  }
}

int CommState::finish(CallId call, cohort_status_t status, int *rc, const char *where) {
  if (status == COHORT_SUCCESS) {
    ++counts_[call.index()].cohort;
    if (std::strncmp(where, kGpuPath, std::strlen(kGpuPath)) == 0) ++counts_[call.index()].gpu;
    say(kEveryCall, "%s ran on %s", call.name(), where);
    *rc = MPI_SUCCESS;
    return 1;
  }
  // Argument checks come before any traffic and give the same answer on every rank.
  if (status == COHORT_ERR_INVALID_ARG || status == COHORT_ERR_NOT_SUPPORTED) {
    return fall_back(call, Fallback::kRefused, cohort_last_error());
  }
  return fail(call, status, rc);
}

void CommState::abort_team() {
  failed_ = true;
  if (team_state_ == TeamState::kReady) cohort_team_abort(team_);
}

int CommState::fail(CallId call, cohort_status_t status, int *rc, const char *what) {
  ++counts_[call.index()].failed;
  const bool first = !failed_;
  abort_team();
  const char *reason = what != nullptr ? what : cohort_last_error();
  if (first) {
    // A peer's abort reaches this rank as COHORT_ERR_ABORTED: that rank said why already.
    const char *aborted = status == COHORT_ERR_ABORTED
                              ? ""
                              : "; Cohort's team for it is aborted, so the other ranks' calls on "
                                "it end now instead of waiting for this one";
    say(kWarning,
        "%s on %s failed: %s (%s)%s; every later call on it that would run on Cohort fails on "
        "every rank (calls that run on Open MPI's modules still run)",
        call.name(), name().c_str(), cohort_status_string(status), reason, aborted);
  } else {
    say(kFirstFallback, "%s on %s failed: %s (%s)", call.name(), name().c_str(),
        cohort_status_string(status), reason);
  }
  *rc = status == COHORT_ERR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
  return 1;
}

void CommState::report() const {
  std::string text;
  for (int c = 0; c < kNumCallIds; ++c) {
    const Counts &counts = counts_[c];
    // Calls Cohort made itself (creating its team, agreeing on memory kinds) are not the
    // program's: verbose 2 names them as they come, the summary leaves them out.
    auto counted = [](int reason) { return reason != static_cast<int>(Fallback::kReentered); };
    long fallbacks = counts.staged[static_cast<int>(StagedTo::kOpenMpi)];
    for (int r = 0; r < kNumFallbacks; ++r) fallbacks += counted(r) ? counts.fallback[r] : 0;
    if (counts.cohort == 0 && fallbacks == 0 && counts.failed == 0) continue;
    const CallId call{static_cast<coll_cohort_kind_t>(c / 2), c % 2 == 1};
    text += std::string("; ") + call.name() + " " + std::to_string(counts.cohort) + " on Cohort";
    if (long n = counts.gpu) text += " (" + std::to_string(n) + " on its GPU path)";
    if (long n = counts.cached) {
      text += " (" + std::to_string(n) + " on buffers the registration cache held)";
    }
    if (long n = counts.packed) {
      text += " (" + std::to_string(n) + " packed from a datatype with gaps)";
    }
    if (long n = counts.failed) text += " (" + std::to_string(n) + " failed)";
    if (long n = counts.staged[static_cast<int>(StagedTo::kCohort)]) {
      text += " (" + std::to_string(n) + " staged through host memory)";
    }
    if (long n = counts.staged[static_cast<int>(StagedTo::kGpu)]) {
      text += " (" + std::to_string(n) + " staged onto the GPU)";
    }
    if (long n = counts.staged[static_cast<int>(StagedTo::kOpenMpi)]) {
      text += ", " + std::to_string(n) + " staged through host memory to Open MPI";
    }
    if (uint64_t bytes = counts.staging.bytes) {
      char cost[96];
      std::snprintf(cost, sizeof cost, " (staging copied %.1f MiB in %.2f ms)",
                    static_cast<double>(bytes) / (1 << 20), counts.staging.nanoseconds / 1e6);
      text += cost;
    }
    for (int r = 0; r < kNumFallbacks; ++r) {
      if (counts.fallback[r] == 0 || !counted(r)) continue;
      text += ", " + std::to_string(counts.fallback[r]) + " fell back (" +
              fallback_text(static_cast<Fallback>(r)) + ")";
    }
  }
  // Communicators that saw no collective are named only from verbose 2 on.
  if (text.empty() && !shown(kFirstFallback)) return;
  if (cache_syncs_ > 0) text += "; " + std::to_string(cache_syncs_) + " registration cache syncs";
  say(kSummary, "%s: %s", name().c_str(), text.empty() ? "no collectives" : text.c_str() + 2);
}

void CommState::close() {
  if (team_state_ == TeamState::kClosed) return;
  if (shown(kSummary)) report();
  if (team_ != nullptr) cohort_team_destroy(team_);
  team_ = nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (dup_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&dup_);
  dup_ = MPI_COMM_NULL;
  team_state_ = TeamState::kClosed;
}

}  // namespace cohort::ompi
