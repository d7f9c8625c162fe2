/* What the component costs over calling Cohort directly: each collective timed through MPI on
 * a communicator the component serves, and through Cohort's C API on a team made from a
 * duplicate of the same communicator, on the same buffers, alternating, in one run.  Prints
 * per size the microseconds of each, their ratio and difference (the slowest rank's average,
 * the better of two rounds).
 *
 *   component_overhead [-m host|device] [-c allreduce|bcast|allgather|alltoall|reduce|
 *                       reduce_scatter_block|barrier] [-s bytes,bytes,...] [-n iterations]
 *
 * Device buffers come from the CUDA driver (libcuda.so.1, found at run time: no CUDA header is
 * needed to build this); run with coll_cohort_host 1 for host buffers. */
#define _POSIX_C_SOURCE 200809L
#include <cohort_mpi.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void die(const char *what) {
  fprintf(stderr, "component_overhead: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ------------------------------------------------------------ device memory via the driver */

typedef int (*cu_int_fn)(int);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_retain_fn)(void **, int);
typedef int (*cu_ctx_fn)(void *);
typedef int (*cu_alloc_fn)(uintptr_t *, size_t);
typedef int (*cu_memset_fn)(uintptr_t, unsigned char, size_t);

/* A device buffer of `bytes`, zeroed, on the GPU local rank % devices; the context stays
 * current on this thread, as an application's would. */
static void *device_alloc(size_t bytes, int local_rank) {
  static void *lib = NULL;
  if (lib == NULL) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) die("-m device needs the CUDA driver (libcuda.so.1)");
  cu_int_fn init = (cu_int_fn)dlsym(lib, "cuInit");
  cu_get_fn get = (cu_get_fn)dlsym(lib, "cuDeviceGet");
  cu_retain_fn retain = (cu_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
  cu_ctx_fn set = (cu_ctx_fn)dlsym(lib, "cuCtxSetCurrent");
  cu_alloc_fn alloc = (cu_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
  cu_memset_fn memset8 = (cu_memset_fn)dlsym(lib, "cuMemsetD8_v2");
  int devices = 0, device = 0;
  if (cohort_cuda_device_count(&devices) != COHORT_SUCCESS || devices == 0) die("no CUDA device");
  void *context = NULL;
  uintptr_t ptr = 0;
  if (!init || !get || !retain || !set || !alloc || !memset8 || init(0) != 0 ||
      get(&device, local_rank % devices) != 0 || retain(&context, device) != 0 ||
      set(context) != 0 || alloc(&ptr, bytes) != 0 || memset8(ptr, 0, bytes) != 0) {
    die("allocating device memory failed");
  }
  return (void *)ptr;
}

/* ------------------------------------------------------------ the two ways of calling */

typedef struct {
  const char *coll;
  MPI_Comm comm;
  cohort_team_t team;
  float *send, *recv;
} Target;

static void via_mpi(const Target *t, int count) {
  const char *c = t->coll;
  if (!strcmp(c, "allreduce")) MPI_Allreduce(t->send, t->recv, count, MPI_FLOAT, MPI_SUM, t->comm);
  if (!strcmp(c, "reduce")) MPI_Reduce(t->send, t->recv, count, MPI_FLOAT, MPI_SUM, 0, t->comm);
  if (!strcmp(c, "bcast")) MPI_Bcast(t->recv, count, MPI_FLOAT, 0, t->comm);
  if (!strcmp(c, "allgather")) {
    MPI_Allgather(t->send, count, MPI_FLOAT, t->recv, count, MPI_FLOAT, t->comm);
  }
  if (!strcmp(c, "alltoall"))
    MPI_Alltoall(t->send, count, MPI_FLOAT, t->recv, count, MPI_FLOAT, t->comm);
  if (!strcmp(c, "reduce_scatter_block")) {
    MPI_Reduce_scatter_block(t->send, t->recv, count, MPI_FLOAT, MPI_SUM, t->comm);
  }
  if (!strcmp(c, "barrier")) MPI_Barrier(t->comm);
}

static void via_cohort(const Target *t, int count) {
  const char *c = t->coll;
  cohort_status_t s = COHORT_SUCCESS;
  const size_t n = (size_t)count;
  if (!strcmp(c, "allreduce"))
    s = cohort_allreduce(t->team, t->send, t->recv, n, COHORT_FLOAT32, COHORT_SUM);
  if (!strcmp(c, "reduce"))
    s = cohort_reduce(t->team, t->send, t->recv, n, COHORT_FLOAT32, COHORT_SUM, 0);
  if (!strcmp(c, "bcast")) s = cohort_broadcast(t->team, t->recv, t->recv, n, COHORT_FLOAT32, 0);
  if (!strcmp(c, "allgather")) s = cohort_allgather(t->team, t->send, t->recv, n, COHORT_FLOAT32);
  if (!strcmp(c, "alltoall")) s = cohort_alltoall(t->team, t->send, t->recv, n, COHORT_FLOAT32);
  if (!strcmp(c, "reduce_scatter_block")) {
    s = cohort_reduce_scatter(t->team, t->send, t->recv, n, COHORT_FLOAT32, COHORT_SUM);
  }
  if (!strcmp(c, "barrier")) s = cohort_barrier(t->team);
  if (s != COHORT_SUCCESS) die(cohort_last_error());
}

/* The slowest rank's average seconds per call. */
static double timed(const Target *t, int direct, int count, int iters) {
  for (int i = 0; i < iters / 10 + 2; ++i) direct ? via_cohort(t, count) : via_mpi(t, count);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) direct ? via_cohort(t, count) : via_mpi(t, count);
  double mine = (MPI_Wtime() - start) / iters, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

static double min2(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv) {
  const char *memory = "host", *sizes = "8,1048576";
  Target t = {"allreduce", MPI_COMM_NULL, NULL, NULL, NULL};
  int iters = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-m")) memory = argv[i + 1];
    if (!strcmp(argv[i], "-c")) t.coll = argv[i + 1];
    if (!strcmp(argv[i], "-s")) sizes = argv[i + 1];
    if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  int local_rank = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  size_t most = 8;
  for (const char *p = sizes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    size_t b = (size_t)atol(p);
    most = b > most ? b : most;
  }
  const size_t bytes = most * (size_t)size + 64;
  const int device = !strcmp(memory, "device");
  t.send = device ? device_alloc(bytes, local_rank) : calloc(bytes, 1);
  t.recv = device ? device_alloc(bytes, local_rank) : calloc(bytes, 1);
  MPI_Comm_dup(MPI_COMM_WORLD, &t.comm);
  MPI_Comm_set_name(t.comm, "overhead-component");
  MPI_Comm direct;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "coll_cohort_enable", "false");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &direct);
  MPI_Info_free(&info);
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  config.name = "overhead-direct";
  config.cuda_device = COHORT_DEVICE_ACTIVE;
  if (cohort_team_create_mpi(direct, &config, &t.team) != COHORT_SUCCESS) die(cohort_last_error());
  if (rank == 0) {
    /* One memory-kind query (cuPointerGetAttributes): the component asks one per buffer before
     * Cohort asks again, so its share of the difference is printed with it. */
    const double start = MPI_Wtime();
    cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
    for (int i = 0; i < 10000; ++i) cohort_memory_kind(i % 2 ? t.send : t.recv, &kind);
    printf("# one cohort_memory_kind query on %s memory: %.3f us\n", cohort_memory_kind_name(kind),
           (MPI_Wtime() - start) / 10000 * 1e6);
    /* What the component asks the registration cache per buffer of a device call. */
    const double noted = MPI_Wtime();
    int registered = 0;
    for (int i = 0; i < 10000; ++i)
      cohort_mem_cache_note(t.team, i % 2 ? t.send : t.recv, 8, &registered);
    printf("# one cohort_mem_cache_note: %.3f us\n", (MPI_Wtime() - noted) / 10000 * 1e6);
    printf("# %s on %d ranks, %s memory, float sum, %d iterations\n", t.coll, size, memory, iters);
    printf("# %10s %12s %12s %8s %10s\n", "bytes", "mpi_us", "direct_us", "ratio", "diff_us");
  }
  for (const char *p = sizes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    const int count = (int)((size_t)atol(p) / sizeof(float));
    const double m1 = timed(&t, 0, count, iters), d1 = timed(&t, 1, count, iters);
    const double m2 = timed(&t, 0, count, iters), d2 = timed(&t, 1, count, iters);
    const double m = min2(m1, m2) * 1e6, d = min2(d1, d2) * 1e6;
    if (rank == 0) printf("  %10ld %12.2f %12.2f %8.3f %10.2f\n", atol(p), m, d, m / d, m - d);
  }
  fflush(stdout);
  cohort_team_destroy(t.team);
  MPI_Comm_free(&direct);
  MPI_Comm_free(&t.comm);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return 0;
}
