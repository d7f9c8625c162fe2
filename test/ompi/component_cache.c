/* The registration cache through the component, on a GPU: MPI_Allreduce on cudaMalloc'd
 * buffers that the program reuses across calls (the cache registers them, and the calls take
 * the zero-copy algorithm), at offsets within them, and freed then allocated again between
 * rounds (usually at the same address: the cache must never serve the old registration, and
 * no rank may read a peer's freed buffer).  Every result is checked in full on the host.
 *
 *   mpirun -np 4 -x COLL_TEST_MEMORY=device --mca coll_cohort_verbose 1 component_cache
 *     [-b bytes] [-r rounds] [-k calls]
 *
 * Prints one line per round (rank 0: the addresses, whether they repeat, the slowest rank's
 * time per call) and "component_cache: N wrong" at the end; exits 1 when any value was wrong.
 * Run with COLL_TEST_MEMORY=device: the buffers come from coll_component_device.c (the CUDA
 * driver, found at run time: a GPU's, or the tests' fake one, where the calls are staged and
 * the cache has nothing to do). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_component_device.h"

static int rank, size;

static void die(const char *what) {
  fprintf(stderr, "component_cache: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void fill(char *device, float value, int count, float *host) {
  for (int i = 0; i < count; ++i) host[i] = value;
  devmem_copy(device, host, (size_t)count * sizeof(float));
}

/* One allreduce of `count` floats at send + offset into recv + offset, every rank's input
 * (rank + 1) * scale; the output checked on the host.  Returns the wrong values. */
static long checked_call(char *send, char *recv, size_t offset, int count, float scale,
                         float *host) {
  char *s = send + offset, *r = recv + offset;
  fill(s, (float)(rank + 1) * scale, count, host);
  fill(r, -1.0f, count, host);
  if (MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
    die("MPI_Allreduce failed");
  }
  devmem_copy(host, r, (size_t)count * sizeof(float));
  const float want = scale * (float)(size * (size + 1) / 2);
  long wrong = 0;
  for (int i = 0; i < count; ++i) wrong += host[i] != want;
  if (wrong > 0) {
    fprintf(stderr, "component_cache: rank %d: %ld of %d wrong (first %g, want %g)\n", rank, wrong,
            count, host[0], want);
  }
  return wrong;
}

int main(int argc, char **argv) {
  size_t bytes = 64u << 20;
  int rounds = 6, calls = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b")) bytes = (size_t)atol(argv[i + 1]);
    if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "-k")) calls = atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  devmem_init(rank);
  if (!devmem_on_device) die("run with COLL_TEST_MEMORY=device");
  const int count = (int)(bytes / sizeof(float));
  float *host = malloc(bytes);
  if (host == NULL) die("malloc failed");
  long wrong = 0;
  char *last_send = NULL, *last_recv = NULL;
  for (int round = 0; round < rounds; ++round) {
    /* Odd rounds allocate a little more: the allocation moves or grows. */
    const size_t extra = round % 3 == 2 ? 4096 : 0;
    char *send = devmem_alloc(bytes + extra), *recv = devmem_alloc(bytes + extra);
    const int same = send == last_send && recv == last_recv;
    double seconds = 0;
    for (int k = 0; k < calls; ++k) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      wrong += checked_call(send, recv, 0, count, (float)(round * calls + k + 1), host);
      seconds += MPI_Wtime() - start;
    }
    /* Part of the same allocations, at an offset: the same registration serves it. */
    wrong += checked_call(send, recv, bytes / 4 / 4096 * 4096, count / 4, (float)(round + 1) * 3.0f,
                          host);
    double slowest = 0;
    MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      printf(
          "round %d: send %#lx recv %#lx (%s the last round's), %.1f us per call with the check\n",
          round, (unsigned long)(uintptr_t)send, (unsigned long)(uintptr_t)recv,
          same ? "at" : "not at", slowest / calls * 1e6);
    }
    devmem_free(send);
    devmem_free(recv);
    last_send = send;
    last_recv = recv;
  }
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("component_cache: %ld wrong\n", all);
  free(host);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
