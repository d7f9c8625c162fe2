/* A collective that fails on one rank only, before Cohort sees it: the fake CUDA driver fails
 * one staging copy on one rank (FAKE_CUDA_FAIL_PINNED_COPY=RANK:N, fake_cuda.c).  That rank's
 * call returns an error; it must not leave the others waiting for it.  Every rank's
 * MPI_Allreduce on device memory (MPI_ERRORS_RETURN) must fail at the same call, within
 * seconds (the failing rank aborts the team; COHORT_COLL_TIMEOUT is far longer), and every
 * later call that runs on Cohort must fail on every rank too (no rank falls back to Open MPI
 * alone, where it would wait for ranks still on Cohort), while a call that runs on Open MPI's
 * module (MPI_MAXLOC) still works.  Needs COLL_TEST_MEMORY=device; prints one line on rank 0
 * and exits 1 when anything is off. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#include "coll_component_device.h"

enum { kCalls = 12 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One device allreduce of this rank's rank + 1: its MPI code, and the sum where it succeeded. */
static int allreduce(int rank, int *sum, double *seconds) {
  int mine = rank + 1;
  *sum = 0;
  void *in = devmem_up(&mine, sizeof mine), *out = devmem_up(sum, sizeof *sum);
  const double start = now();
  const int rc = MPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  *seconds = now() - start;
  devmem_down(&mine, in, sizeof mine);
  devmem_down(sum, out, sizeof *sum);
  return rc;
}

/* MPI_MAXLOC has no Cohort op: its call runs on Open MPI's module on every rank alike. */
static int maxloc_right(int rank, int size) {
  struct {
    double value;
    int rank;
  } pair = {(double)rank, rank}, best = {-1, -1};
  void *in = devmem_up(&pair, sizeof pair), *out = devmem_up(&best, sizeof best);
  const int rc = MPI_Allreduce(in, out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  devmem_down(&pair, in, sizeof pair);
  devmem_down(&best, out, sizeof best);
  return rc == MPI_SUCCESS && best.value == size - 1 && best.rank == size - 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  devmem_init(rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm ompi; /* Open MPI's modules, for the verdict */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "coll_cohort_enable", "false");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ompi);
  MPI_Info_free(&info);
  int first_error = -1, errors = 0, wrong = 0;
  double slowest_error = 0;
  for (int i = 0; i < kCalls; ++i) {
    int sum = 0;
    double seconds = 0;
    if (allreduce(rank, &sum, &seconds) != MPI_SUCCESS) {
      if (first_error < 0) first_error = i;
      ++errors;
      slowest_error = seconds > slowest_error ? seconds : slowest_error;
    } else if (sum != size * (size + 1) / 2 || first_error >= 0) {
      ++wrong; /* a wrong sum, or a success after a failure */
    }
  }
  const int maxloc = maxloc_right(rank, size);
  int lowest = 0, highest = 0, least_errors = 0, all_wrong = 0, maxloc_everywhere = 0;
  double slowest = 0;
  MPI_Allreduce(&first_error, &lowest, 1, MPI_INT, MPI_MIN, ompi);
  MPI_Allreduce(&first_error, &highest, 1, MPI_INT, MPI_MAX, ompi);
  MPI_Allreduce(&errors, &least_errors, 1, MPI_INT, MPI_MIN, ompi);
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, ompi);
  MPI_Allreduce(&maxloc, &maxloc_everywhere, 1, MPI_INT, MPI_MIN, ompi);
  MPI_Allreduce(&slowest_error, &slowest, 1, MPI_DOUBLE, MPI_MAX, ompi);
  const int ok = lowest >= 0 && lowest == highest && least_errors == kCalls - lowest &&
                 all_wrong == 0 && maxloc_everywhere && slowest < 10;
  if (rank == 0) {
    printf(
        "%s: first failed call %d to %d of %d on %d ranks, every later one failed: %s, "
        "slowest failing call %.3f s, wrong results %d, MPI_MAXLOC after it right: %s\n",
        ok ? "PASS" : "FAIL", lowest, highest, kCalls, size,
        least_errors == kCalls - lowest ? "yes" : "no", slowest, all_wrong,
        maxloc_everywhere ? "yes" : "no");
  }
  MPI_Comm_free(&ompi);
  MPI_Finalize();
  return ok ? 0 : 1;
}
