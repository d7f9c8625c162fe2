// One communicator as the component sees it: its Cohort team (created at the first call that
// runs on Cohort, on a private duplicate so nothing Cohort sends can meet the application's
// messages), what ran where and why, and the report at its end.
#pragma once

#include <mpi.h>

#include <array>
#include <string>

#include "cohort.h"
#include "dispatch.h"

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

class CommState : NonCopyable {
 public:
  explicit CommState(MPI_Comm comm);
  ~CommState();

  // The team, created on first use; nullptr when it cannot be had (every rank alike: team
  // creation ends the same everywhere), after warning once why.
  cohort_team_t team(Coll coll);

  // Counts a fallback (and says so at verbose 2 the first time, 3 every time); returns 0, the
  // entry points' "fall back".
  int fall_back(Coll coll, Fallback reason, const char *detail = nullptr);

  // Turns Cohort's status into the entry points' result: 1 with *rc set when Cohort ran (or
  // failed during) the call, 0 when its check refused the call before any traffic.
  int finish(Coll coll, cohort_status_t status, int *rc);

  bool failed_before() const { return failed_; }
  MPI_Comm comm() const { return comm_; }

  // Destroys the team and prints the summary (verbose >= 1); idempotent.  Runs when the
  // communicator ends, or at MPI_Finalize for those still alive then.
  void close();

 private:
  struct Counts {
    long cohort = 0;
    std::array<long, kNumFallbacks> fallback{};
  };
  void create_team(Coll coll);
  bool duplicate(const std::string &label, Coll coll);
  void report() const;
  std::string name() const;

  MPI_Comm comm_;
  int ordinal_;  // creation order in this process, to name unnamed communicators
  MPI_Comm dup_ = MPI_COMM_NULL;
  cohort_team_t team_ = nullptr;
  enum class TeamState { kNone, kReady, kUnavailable, kClosed } team_state_ = TeamState::kNone;
  bool failed_ = false;
  std::array<Counts, kNumColls> counts_{};
};

}  // namespace cohort::ompi
