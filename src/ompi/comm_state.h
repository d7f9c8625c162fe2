// One communicator as the component sees it: its Cohort team (created at the first call that
// runs on Cohort, on a private duplicate so nothing Cohort sends can meet the application's
// messages), what ran where and why, and the report at its end.
#pragma once

#include <mpi.h>

#include <array>
#include <string>

#include "cohort_mpi.h"
#include "dispatch.h"
#include "staging.h"

namespace cohort::ompi {

// Base of the component's classes that own a scope or handles: never copied.
class NonCopyable {
 protected:
  NonCopyable() = default;
  NonCopyable(const NonCopyable &) = delete;
  NonCopyable &operator=(const NonCopyable &) = delete;
};

// Marks this thread as inside Cohort for the scope's life.
class BusyScope : NonCopyable {
 public:
  BusyScope();
  ~BusyScope();
};
bool busy();

// A collective as counted and named: its kind, blocking or not.
struct CallId {
  coll_cohort_kind_t kind;
  bool nonblocking;
  const char *name() const { return coll_mpi_name(kind, nonblocking); }
  int index() const { return static_cast<int>(kind) * 2 + (nonblocking ? 1 : 0); }
};
constexpr int kNumCallIds = COLL_COHORT_NUM_KINDS * 2;

// Where a staged call ran: on Cohort's host path or Open MPI's module (device memory staged
// through host memory), or on Cohort's GPU path (host memory staged onto the GPU, to join the
// other ranks there).
enum class StagedTo { kCohort, kOpenMpi, kGpu };
constexpr int kNumStagedTo = 3;

// Where a call ran when Cohort's GPU path ran it ("Cohort's GPU path (staged)" too): the
// summary counts those apart.
inline constexpr const char *kGpuPath = "Cohort's GPU path";

class CommState : NonCopyable {
 public:
  explicit CommState(MPI_Comm comm);
  ~CommState();

  // The team, created on first use; nullptr when it cannot be had (every rank alike: team
  // creation ends the same everywhere), after warning once why.
  cohort_team_t team(CallId call);
  // The team if a blocking call made it already: a nonblocking call must not wait for every
  // rank to join a new one (and Open MPI's own communicator setup posts them).
  cohort_team_t ready_team() const { return team_state_ == TeamState::kReady ? team_ : nullptr; }

  // Counts a fallback (and says so at verbose 2 the first time, 3 every time); returns 0, the
  // entry points' "fall back".
  int fall_back(CallId call, Fallback reason, const char *detail = nullptr);
  // Counts a staged call (and says so at verbose 2 the first time, 3 every time): `why` it
  // could not run where its buffers are, `bytes` staged.
  void staged(CallId call, StagedTo to, size_t bytes, const char *why);
  // Counts a call whose datatype has gaps on this rank, moved as `bytes` packed bytes.
  void packed(CallId call, size_t bytes);

  // Turns Cohort's status into the entry points' result: 1 with *rc set when Cohort ran (or
  // failed during) the call, 0 when its check refused the call before any traffic (a refusal
  // that every rank gets alike from the same arguments).  `where`: the path that ran it, for
  // verbose 3 ("Cohort's GPU path", ...).  A failure goes to fail().
  int finish(CallId call, cohort_status_t status, int *rc, const char *where = "Cohort");
  // A call that failed on this rank, in Cohort or before Cohort saw it (`what`: staging,
  // packing; nullptr: Cohort's own words): *rc says so and the entry points' result is 1.
  // Cohort's team is aborted, so that every other rank's call on it ends at once, naming this
  // rank, instead of waiting for it; from then on every rank's calls that run on Cohort fail
  // alike, and those that run on Open MPI's modules still run.  No rank falls back alone: the
  // others would wait for it in Cohort while it waited for them in Open MPI.
  int fail(CallId call, cohort_status_t status, int *rc, const char *what = nullptr);

  // Blocking calls only (every rank makes them in the same order): whether this call runs as
  // one whose buffers are on the GPU on every rank, `mine` being this rank's answer.  The
  // first blocking call on the communicator learns whether any rank has a CUDA device (one
  // MPI_Allreduce); where none has, no call needs to agree.  Where some has, the ranks agree
  // (a 4-byte host allreduce over the team: the GPU only when every rank is on it), but only
  // now and then for calls of one collective and size class (RouteMemo): in between, every
  // rank takes the remembered route, and a rank whose buffers are elsewhere stages them
  // there.  coll_cohort_uniform_memory says the kinds always match: no agreement on them.
  // The same exchange, at the same points, carries whether some rank has allocations for the
  // registration cache (cohort_mem_cache_wanted); if one has, every rank syncs the cache
  // there (so with coll_cohort_uniform_memory the exchange still runs at those points, for
  // the cache alone, once the team exists).
  bool all_on_device(CallId call, const coll_cohort_args_t &args, bool mine);
  // A blocking call's device buffers (this rank's, `n` of them), told to the registration
  // cache before the agreement, so that a sync there registers them.
  void note_cached(CallId call, const void *const *buffers, const size_t *bytes, int n);
  // True while this state runs its own MPI call (the agreement's fallback): not counted.
  bool agreeing() const { return agreeing_; }

  MPI_Comm comm() const { return comm_; }
  int rank() { return learn_shape(), rank_; }
  int size() { return learn_shape(), size_; }
  StagingPools &pools() { return pools_; }
  StagingCost &staging_cost(CallId call) { return counts_[call.index()].staging; }

  // Destroys the team and prints the summary (verbose >= 1); idempotent.  Runs when the
  // communicator ends, or at MPI_Finalize for those still alive then.
  void close();

 private:
  struct Counts {
    long cohort = 0;  // staged ones included
    long gpu = 0;     // of those, on Cohort's GPU path
    long packed = 0;  // calls with a datatype with gaps on this rank, moved packed
    long failed = 0;
    long cached = 0;  // device calls whose buffers the registration cache held on this rank
    std::array<long, kNumStagedTo> staged{};
    std::array<long, kNumFallbacks> fallback{};
    StagingCost staging;
  };
  void create_team(CallId call);
  void abort_team();  // after a failure on this rank: the other ranks' calls end too
  bool duplicate(const std::string &label, CallId call);
  void report() const;
  std::string name() const;

  MPI_Comm comm_;
  int rank_ = 0, size_ = 0;  // 0: not asked yet
  void learn_shape();
  int ordinal_;  // creation order in this process, to name unnamed communicators
  MPI_Comm dup_ = MPI_COMM_NULL;
  cohort_team_t team_ = nullptr;
  enum class TeamState { kNone, kReady, kUnavailable, kClosed } team_state_ = TeamState::kNone;
  bool failed_ = false;  // a call failed on this rank: the team is aborted
  enum class Memory { kUnknown, kHostOnly, kGpu } memory_ = Memory::kUnknown;
  bool agreeing_ = false;
  int mpi_max(CallId call, int mine);  // MAX over the communicator, on Open MPI's module
  bool sync_cache(CallId call);        // cohort_mem_cache_sync; false (team aborted) if it failed
  long cache_syncs_ = 0;
  void wait_for_all(MPI_Request *request, CallId call, const char *what);
  std::array<Counts, kNumCallIds> counts_{};
  StagingPools pools_;
  RouteMemo routes_;
};

}  // namespace cohort::ompi
