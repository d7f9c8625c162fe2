// How a team's creation enters before its first exchange, where the team's OOB is not yet
// its own: a team from an MPI communicator checks in on the caller's communicator and then
// duplicates it (mpi_entry.h, in the MPI part of the library).  Teams over a unique id or a
// caller's OOB have no entry: their first exchange checks them in.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/oob.h"
#include "core/status.h"
#include "team/peer.h"

namespace cohort {

class CreationEntry {
 public:
  virtual ~CreationEntry() = default;
  // COHORT_SUCCESS once the team's own OOB exists (take_oob()), COHORT_IN_PROGRESS, or the
  // failure every rank agreed on.
  virtual Status progress() = 0;
  virtual std::unique_ptr<Oob> take_oob() = 0;
  // Who checked in (after success): names ranks before peer-info.
  virtual const std::vector<ArrivalRecord> &arrivals() const = 0;
  // The caller walked away (abort, or destroy during creation), saying `why`: no peer is left
  // waiting for its timeout.
  virtual void abandon(const std::string &why) = 0;
};

// Makes a team's entry once its config is resolved: `local` (with `detail`) is this rank's
// status, which it checks in with, so that a rank whose config is bad fails every rank alike.
using EntryFactory = std::function<std::unique_ptr<CreationEntry>(
    double timeout_s, Status local, const std::string &detail)>;

}  // namespace cohort
