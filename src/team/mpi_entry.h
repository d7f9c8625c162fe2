// How a team created from an MPI communicator enters: the check-in on the caller's
// communicator (checkin.h), then MPI_Comm_idup of it, which becomes the team's private
// communicator.  A creation over a caller's OOB has no such entry: one allgather checks it in.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "team/checkin.h"
#include "team/config.h"
#include "team/creation_entry.h"

namespace cohort {

class MpiEntry final : public CreationEntry {
 public:
  // `local` (with `detail`) is this rank's status: a rank whose config is bad still checks in,
  // carrying its error, so that every rank fails alike.  owns_comm: free `comm` when done.
  MpiEntry(MPI_Comm comm, bool owns_comm, double timeout_s, Status local,
           const std::string &detail);
  ~MpiEntry() override;
  MpiEntry(const MpiEntry &) = delete;
  MpiEntry &operator=(const MpiEntry &) = delete;

  // COHORT_SUCCESS once the private communicator exists (take_comm()), COHORT_IN_PROGRESS, or
  // the failure every rank agreed on.
  Status progress() override;
  std::unique_ptr<Oob> take_oob() override;  // an MpiOob on the private communicator
  const std::vector<ArrivalRecord> &arrivals() const override { return arrivals_; }

  // The caller walked away (abort, or destroy during creation), saying `why`.  Before this rank
  // confirmed its check-in, every rank is told at once; after, the check-in and the dup finish
  // (here for up to a second, else in the background: lingering.h) and the others are then
  // told on the private communicator.  No peer is left waiting for its timeout.
  void abandon(const std::string &why) override;

 private:
  Status check_in();
  Status wait_dup_turn();
  Status poll_dup();

  MPI_Comm user_comm_;
  bool owns_user_comm_;
  double timeout_s_;
  std::unique_ptr<CheckIn> checkin_;
  std::unique_ptr<DupTicket> ticket_;  // held from posting the dup to its completion
  MPI_Comm dup_ = MPI_COMM_NULL;
  MPI_Request dup_request_ = MPI_REQUEST_NULL;
  int64_t dup_deadline_ns_ = 0;
  std::vector<ArrivalRecord> arrivals_;
};

}  // namespace cohort
