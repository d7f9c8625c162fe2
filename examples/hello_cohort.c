/* The smallest Cohort program: a team over MPI_COMM_WORLD, one allreduce on host memory, the
 * answer checked.  Plain C99; the README builds it with pkg-config against an installed
 * Cohort, and the install test does too. */
#include <cohort_mpi.h>
#include <stdio.h>

enum { kCount = 1000 };

/* Sums every rank's 1..kCount-scaled values with Cohort; 1 when each value is right. */
static int allreduce_ok(cohort_team_t team, int rank, int size) {
  static double values[kCount]; /* in place: send and receive buffer the same, as NCCL */
  for (int i = 0; i < kCount; ++i) values[i] = (double)(rank + 1) * i;
  if (cohort_allreduce(team, values, values, kCount, COHORT_FLOAT64, COHORT_SUM) !=
      COHORT_SUCCESS) {
    return 0;
  }
  double rank_sum = size * (size + 1) / 2.0;
  for (int i = 0; i < kCount; ++i) {
    if (values[i] != rank_sum * i) return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int world = 0, rank = 0, size = -1, team_rank = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cohort_team_config_t config = COHORT_TEAM_CONFIG_INITIALIZER;
  config.cuda_device = COHORT_DEVICE_NONE; /* host memory only */
  cohort_team_t team;
  int ok = cohort_team_create_mpi(MPI_COMM_WORLD, &config, &team) == COHORT_SUCCESS;
  if (ok) {
    ok = cohort_team_size(team, &size) == COHORT_SUCCESS &&
         cohort_team_rank(team, &team_rank) == COHORT_SUCCESS && size == world &&
         team_rank == rank && allreduce_ok(team, rank, size);
    ok = cohort_team_destroy(team) == COHORT_SUCCESS && ok;
  }
  if (!ok) fprintf(stderr, "rank %d: %s\n", rank, cohort_last_error());
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf("hello_cohort: %d ranks, team and allreduce %s\n", world, ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}
