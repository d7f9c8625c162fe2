/* A plain MPI program (nothing of Cohort in it): run it with the Open MPI component and its
 * MPI_Allreduce, MPI_Bcast and MPI_Barrier run on Cohort.  Checks its answers. */
#include <mpi.h>
#include <stdio.h>

enum { kCount = 1 << 16 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static int values[kCount], sums[kCount];
  for (int i = 0; i < kCount; ++i) values[i] = rank + i;
  MPI_Allreduce(values, sums, kCount, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int ok = 1;
  for (int i = 0; i < kCount; ++i) ok &= sums[i] == size * (size - 1) / 2 + size * i;
  int root_rank = rank;
  MPI_Bcast(&root_rank, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ok &= root_rank == 0;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_allreduce: %d ranks: %s\n", size, ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}
