/* A C program against the installed Cohort: proves cohort.h is C, cohort.pc links it. */
#include <cohort.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int world = 0, rank = 0, size = -1, team_rank = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cohort_team_config_t config = COHORT_TEAM_CONFIG_INITIALIZER;
  config.cuda_device = COHORT_DEVICE_NONE;
  cohort_team_t team;
  int ok = cohort_team_create_mpi(MPI_COMM_WORLD, &config, &team) == COHORT_SUCCESS &&
           cohort_team_size(team, &size) == COHORT_SUCCESS &&
           cohort_team_rank(team, &team_rank) == COHORT_SUCCESS && size == world &&
           team_rank == rank && cohort_team_destroy(team) == COHORT_SUCCESS;
  if (!ok) fprintf(stderr, "rank %d: %s\n", rank, cohort_last_error());
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf("hello_team: %d ranks: %s\n", world, ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}
