// Teams from MPI communicators (the MPI part of the library; team_mpi.cc).
#pragma once

#include <mpi.h>

#include <memory>

#include "cohort.h"
#include "core/status.h"

namespace cohort {

class TeamImpl;

// Posts the creation of a team over `comm`; with owns_comm the team frees comm when destroyed.
Status post_mpi_team(MPI_Comm comm, bool owns_comm, const cohort_team_config_t *config,
                     std::shared_ptr<TeamImpl> *out);

}  // namespace cohort
