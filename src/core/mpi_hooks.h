// What the core of a team needs from MPI, for teams made from an MPI communicator.  The MPI
// part of the library (team/team_mpi.cc; in libcohort.so, not in libnccl.so.2) fills the table when
// it loads; without it, no team is an MPI team and none of these is called.
#pragma once

#include <memory>
#include <string>

#include "cohort.h"
#include "core/status.h"

namespace cohort {

class TeamImpl;

struct MpiHooks {
  bool (*usable)() = nullptr;              // MPI initialised and not yet finalised
  void (*progress_lingering)() = nullptr;  // abandoned MPI creations finishing (lingering.h)
  Status (*split)(TeamImpl &parent, int color, int key, const cohort_team_config_t *config,
                  std::shared_ptr<TeamImpl> *child) = nullptr;
  std::string (*library_version)() = nullptr;  // MPI_Get_library_version
};

MpiHooks &mpi_hooks();
// MPI is loaded, initialised and not finalised.
bool mpi_usable_now();

}  // namespace cohort
