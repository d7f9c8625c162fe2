// The C API of teams from MPI communicators (cohort_mpi.h): the MPI part of the library.
#include "cohort_mpi.h"
#include "core/oob_mpi.h"
#include "team/api_calls.h"
#include "team/team.h"
#include "team/team_mpi.h"

namespace cohort {
namespace {

Status check_mpi_comm(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized) {
    return fail(COHORT_ERR_INVALID_USAGE, "MPI is not initialised: call MPI_Init first");
  }
  if (finalized) return fail(COHORT_ERR_INVALID_USAGE, "MPI is already finalised");
  if (comm == MPI_COMM_NULL) return fail(COHORT_ERR_INVALID_ARG, "comm is MPI_COMM_NULL");
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter) {
    return fail(COHORT_ERR_NOT_SUPPORTED,
                "comm is an inter-communicator; create teams from intra-communicators");
  }
  return COHORT_SUCCESS;
}

Status create_over(const char *call, MPI_Comm comm, const cohort_team_config_t *config,
                   bool blocking, cohort_team_t *out) {
  return create_team(
      call,
      [&](std::shared_ptr<TeamImpl> *team) {
        Status s = check_mpi_comm(comm);
        return is_error(s) ? s : post_mpi_team(comm, false, config, team);
      },
      blocking, out);
}

}  // namespace
}  // namespace cohort

extern "C" {

cohort_status_t cohort_team_create_mpi(MPI_Comm comm, const cohort_team_config_t *config,
                                       cohort_team_t *team) {
  return cohort::create_over("cohort_team_create_mpi", comm, config, /*blocking=*/true, team);
}

cohort_status_t cohort_team_create_mpi_post(MPI_Comm comm, const cohort_team_config_t *config,
                                            cohort_team_t *team) {
  return cohort::create_over("cohort_team_create_mpi_post", comm, config, /*blocking=*/false, team);
}

}  // extern "C"
