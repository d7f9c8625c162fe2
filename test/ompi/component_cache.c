/* The registration cache through the component, on a GPU: MPI_Allreduce on cudaMalloc'd
 * buffers that the program reuses across calls (the cache registers them, and the calls take
 * the zero-copy algorithm), at offsets within them, and freed then allocated again between
 * rounds (usually at the same address: the cache must never serve the old registration, and
 * no rank may read a peer's freed buffer).  Every result is checked in full on the host.
 *
 *   mpirun -np 4 --mca coll_cohort_verbose 1 component_cache [-b bytes] [-r rounds] [-k calls]
 *
 * Prints one line per round (rank 0: the addresses, whether they repeat, the slowest rank's
 * time per call) and "component_cache: N wrong" at the end; exits 1 when any value was wrong.
 * Device memory comes from the CUDA driver (libcuda.so.1, found at run time: a GPU's, or the
 * tests' fake one, where the calls are staged and the cache has nothing to do). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static struct {
  int (*init)(unsigned);
  int (*device_get)(int *, int);
  int (*device_count)(int *);
  int (*retain)(void **, int);
  int (*set)(void *);
  int (*alloc)(uintptr_t *, size_t);
  int (*free)(uintptr_t);
  int (*copy)(uintptr_t, uintptr_t, size_t); /* cuMemcpy: unified addresses, either way */
} cu;

static void die(const char *what) {
  fprintf(stderr, "component_cache: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (p == NULL) die(name);
  return p;
}

static void driver_init(int local_rank) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) die("needs the CUDA driver (libcuda.so.1)");
  *(void **)&cu.init = sym(lib, "cuInit");
  *(void **)&cu.device_get = sym(lib, "cuDeviceGet");
  *(void **)&cu.device_count = sym(lib, "cuDeviceGetCount");
  *(void **)&cu.retain = sym(lib, "cuDevicePrimaryCtxRetain");
  *(void **)&cu.set = sym(lib, "cuCtxSetCurrent");
  *(void **)&cu.alloc = sym(lib, "cuMemAlloc_v2");
  *(void **)&cu.free = sym(lib, "cuMemFree_v2");
  *(void **)&cu.copy = sym(lib, "cuMemcpy");
  int devices = 0, device = 0;
  void *context = NULL;
  if (cu.init(0) != 0 || cu.device_count(&devices) != 0 || devices == 0 ||
      cu.device_get(&device, local_rank % devices) != 0 || cu.retain(&context, device) != 0 ||
      cu.set(context) != 0) {
    die("no CUDA device");
  }
}

static uintptr_t device_alloc(size_t bytes) {
  uintptr_t p = 0;
  if (cu.alloc(&p, bytes) != 0) die("cuMemAlloc failed");
  return p;
}

static void fill(uintptr_t device, float value, int count, float *host) {
  for (int i = 0; i < count; ++i) host[i] = value;
  if (cu.copy(device, (uintptr_t)host, (size_t)count * sizeof(float)) != 0) die("cuMemcpy failed");
}

/* One allreduce of `count` floats at send + offset into recv + offset, every rank's input
 * (rank + 1) * scale; the output checked on the host.  Returns the wrong values. */
static long checked_call(uintptr_t send, uintptr_t recv, size_t offset, int count, float scale,
                         float *host) {
  const uintptr_t s = send + offset, r = recv + offset;
  fill(s, (float)(rank + 1) * scale, count, host);
  fill(r, -1.0f, count, host);
  if (MPI_Allreduce((void *)s, (void *)r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    die("MPI_Allreduce failed");
  }
  if (cu.copy((uintptr_t)host, r, (size_t)count * sizeof(float)) != 0) die("cuMemcpy failed");
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
  MPI_Comm node;
  int local_rank = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  driver_init(local_rank);
  const int count = (int)(bytes / sizeof(float));
  float *host = malloc(bytes);
  if (host == NULL) die("malloc failed");
  long wrong = 0;
  uintptr_t last_send = 0, last_recv = 0;
  for (int round = 0; round < rounds; ++round) {
    /* Odd rounds allocate a little more: the allocation moves or grows. */
    const size_t extra = round % 3 == 2 ? 4096 : 0;
    uintptr_t send = device_alloc(bytes + extra), recv = device_alloc(bytes + extra);
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
          round, (unsigned long)send, (unsigned long)recv, same ? "at" : "not at",
          slowest / calls * 1e6);
    }
    cu.free(send);
    cu.free(recv);
    last_send = send;
    last_recv = recv;
  }
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("component_cache: %ld wrong\n", all);
  free(host);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
