// A team: the ranks of one MPI communicator (or unique id, or generic OOB) that run collectives together.
// This class is the team's lifecycle (creating, ready, failed, aborted) over its parts
// (team_parts.h): creation fills them (creation.h), the collective front end runs on them
// (coll_front.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "cohort.h"
#include "team/creation.h"
#include "team/creation_entry.h"
#include "team/team_parts.h"

namespace cohort {

// Internal; the public C++ wrapper is cohort::Team in cohort.hpp.
class TeamImpl {
 public:
  // Post creation through an entry (a team from an MPI communicator: team_mpi.h) as rank
  // `rank` of `size`.
  static Status post_entry(EntryFactory make_entry, int size, int rank,
                           const cohort_team_config_t *config, std::shared_ptr<TeamImpl> *out);
  static Status post_oob(const cohort_oob_t *oob, const cohort_team_config_t *config,
                         std::shared_ptr<TeamImpl> *out);
  // Over the socket OOB of a unique id (cohort_unique_id_create), as ncclCommInitRank.
  static Status post_socket(const cohort_unique_id_t &id, int size, int rank,
                            const cohort_team_config_t *config, std::shared_ptr<TeamImpl> *out);
  ~TeamImpl();

  // One nonblocking step of creation: COHORT_SUCCESS when ready, COHORT_IN_PROGRESS, or the
  // error every rank agreed on (repeated, with its message, on every later call).
  Status progress();
  // Drives progress() to the end, yielding the core between polls.
  Status wait();

  // Split is an MPI team's (through mpi_hooks(); other teams: COHORT_ERR_NOT_SUPPORTED).
  Status split(int color, int key, const cohort_team_config_t *config,
               std::shared_ptr<TeamImpl> *child);
  // The MPI part's split (team_mpi.cc), which split() reaches through mpi_hooks().
  Status split_mpi(int color, int key, const cohort_team_config_t *config,
                   std::shared_ptr<TeamImpl> *child);
  // Ends the team now: a creation in flight is abandoned (the others told), collectives in
  // flight here end with COHORT_ERR_ABORTED, and every peer's pending or next collective
  // fails naming this rank.  On a ready team it makes no MPI call, so it is safe from another
  // thread than the one in a collective.
  void abort();
  // COHORT_SUCCESS once ready; otherwise the reason the team cannot be used.
  Status check_ready() const;
  Status async_error() const;

  // Once ready (check_ready()):
  CollFront &colls() { return parts_.colls; }
  const TeamInfo &info() const { return parts_.info; }

 private:
  bool uses_mpi() const;  // created from an MPI communicator, not over another OOB
  enum class Stage { kCreating, kReady, kFailed, kAborted };

  TeamImpl() = default;
  void begin(const cohort_team_config_t *config, const EntryFactory &make_entry);
  Status ready_locked() const;
  Status finish_failed(Status status);
  void release();

  mutable std::mutex mutex_;
  Stage stage_ = Stage::kCreating;
  Status status_ = COHORT_IN_PROGRESS;
  std::string error_;  // message of the failure every rank agreed on
  cohort_team_config_t public_config_ = COHORT_TEAM_CONFIG_INITIALIZER;  // children inherit it
  std::string public_name_;  // storage behind public_config_.name
  TeamParts parts_;
  std::unique_ptr<Creation> creation_;  // while creating
};

}  // namespace cohort
