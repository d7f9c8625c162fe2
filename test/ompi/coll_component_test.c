/* Runs MPI collectives the way an unmodified application does, checks every result against
 * values computed here, and prints one digest line per case and rank ("rank case digest"), so
 * a run through the cohort component can be compared with a run on Open MPI's own modules.
 * The unsupported cases at the end (MPI_MAXLOC, a user op, MPI_SHORT, a strided type) must
 * fall back and still be right.  Exits 1 if any result is wrong. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size, wrong;

static uint64_t digest(const void *data, size_t bytes) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static void check(const char *name, int ok, const void *result, size_t bytes) {
  printf("%d %s %016llx%s\n", rank, name, (unsigned long long)digest(result, bytes),
         ok ? "" : " WRONG");
  if (!ok) ++wrong;
}

/* The element types reductions are tested on, with a way to store and load small integers. */
typedef struct {
  MPI_Datatype type;
  const char *name;
  size_t size;
  int is_unsigned;
} Type;
static const Type kTypes[] = {
    {MPI_INT, "int", sizeof(int), 0},          {MPI_UNSIGNED, "unsigned", sizeof(unsigned), 1},
    {MPI_LONG_LONG, "llong", sizeof(long long), 0}, {MPI_FLOAT, "float", sizeof(float), 0},
    {MPI_DOUBLE, "double", sizeof(double), 0},  {MPI_INT8_T, "int8", 1, 0},
};

static void store(const Type *t, void *buf, size_t i, double v) {
  if (t->type == MPI_INT) ((int *)buf)[i] = (int)v;
  if (t->type == MPI_UNSIGNED) ((unsigned *)buf)[i] = (unsigned)v;
  if (t->type == MPI_LONG_LONG) ((long long *)buf)[i] = (long long)v;
  if (t->type == MPI_FLOAT) ((float *)buf)[i] = (float)v;
  if (t->type == MPI_DOUBLE) ((double *)buf)[i] = v;
  if (t->type == MPI_INT8_T) ((int8_t *)buf)[i] = (int8_t)v;
}

static double load(const Type *t, const void *buf, size_t i) {
  if (t->type == MPI_INT) return ((const int *)buf)[i];
  if (t->type == MPI_UNSIGNED) return ((const unsigned *)buf)[i];
  if (t->type == MPI_LONG_LONG) return (double)((const long long *)buf)[i];
  if (t->type == MPI_FLOAT) return ((const float *)buf)[i];
  if (t->type == MPI_DOUBLE) return ((const double *)buf)[i];
  return ((const int8_t *)buf)[i];
}

/* Rank r's element i: small integers, so every sum and product is exact in every type. */
static double value(MPI_Op op, const Type *t, int r, size_t i) {
  if (op == MPI_PROD) return 1 + (double)((r + i) % 2);
  double v = (double)((r * 7 + i * 3) % 11);
  return t->is_unsigned ? v : v - 5;
}

static double expected(MPI_Op op, const Type *t, size_t i) {
  double e = value(op, t, 0, i);
  for (int r = 1; r < size; ++r) {
    double v = value(op, t, r, i);
    if (op == MPI_SUM) e += v;
    if (op == MPI_PROD) e *= v;
    if (op == MPI_MIN) e = v < e ? v : e;
    if (op == MPI_MAX) e = v > e ? v : e;
  }
  return e;
}

static const size_t kCounts[] = {0, 1, 7, 1023, 65537};
#define NUM(a) (sizeof(a) / sizeof((a)[0]))
static const MPI_Op kOps[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
static const char *const kOpNames[] = {"sum", "prod", "min", "max"};

static void test_allreduce(void) {
  for (size_t t = 0; t < NUM(kTypes); ++t)
    for (size_t o = 0; o < NUM(kOps); ++o)
      for (size_t c = 0; c < NUM(kCounts); ++c)
        for (int in_place = 0; in_place < 2; ++in_place) {
          const Type *type = &kTypes[t];
          size_t n = kCounts[c];
          /* int8 sums of 8 ranks stay in range; products of 2s overflow int8 at 8 ranks */
          if (type->type == MPI_INT8_T && kOps[o] == MPI_PROD) continue;
          char *send = malloc(n * type->size + 1), *recv = malloc(n * type->size + 1);
          for (size_t i = 0; i < n; ++i) store(type, in_place ? recv : send, i, value(kOps[o], type, rank, i));
          MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)n, type->type, kOps[o], MPI_COMM_WORLD);
          int ok = 1;
          for (size_t i = 0; i < n; ++i) ok &= load(type, recv, i) == expected(kOps[o], type, i);
          char name[96];
          snprintf(name, sizeof name, "allreduce-%s-%s-%zu%s", type->name, kOpNames[o], n, in_place ? "-inplace" : "");
          check(name, ok, recv, n * type->size);
          free(send);
          free(recv);
        }
}

static void test_reduce(void) {
  for (size_t t = 0; t < NUM(kTypes); t += 2)
    for (size_t o = 0; o < NUM(kOps); o += 3)
      for (size_t c = 1; c < NUM(kCounts); ++c)
        for (int root = 0; root < size; root += size - 1 > 0 ? size - 1 : 1)
          for (int in_place = 0; in_place < 2; ++in_place) {
            const Type *type = &kTypes[t];
            size_t n = kCounts[c];
            int at_root = rank == root, inp = in_place && at_root;
            char *send = malloc(n * type->size), *recv = malloc(n * type->size);
            for (size_t i = 0; i < n; ++i) store(type, inp ? recv : send, i, value(kOps[o], type, rank, i));
            MPI_Reduce(inp ? MPI_IN_PLACE : send, recv, (int)n, type->type, kOps[o], root, MPI_COMM_WORLD);
            int ok = 1;
            for (size_t i = 0; at_root && i < n; ++i) ok &= load(type, recv, i) == expected(kOps[o], type, i);
            char name[96];
            snprintf(name, sizeof name, "reduce-%s-%s-%zu-root%d%s", type->name, kOpNames[o], n, root, in_place ? "-inplace" : "");
            check(name, ok, at_root ? recv : send, n * type->size);
            free(send);
            free(recv);
          }
}

static void test_bcast(void) {
  for (size_t c = 0; c < NUM(kCounts); ++c)
    for (int root = 0; root < size; ++root) {
      size_t n = kCounts[c];
      double *buf = malloc(n * sizeof(double) + 1);
      for (size_t i = 0; i < n; ++i) buf[i] = rank == root ? (double)(i * 3 + root) : -1;
      MPI_Bcast(buf, (int)n, MPI_DOUBLE, root, MPI_COMM_WORLD);
      int ok = 1;
      for (size_t i = 0; i < n; ++i) ok &= buf[i] == (double)(i * 3 + root);
      char name[64];
      snprintf(name, sizeof name, "bcast-double-%zu-root%d", n, root);
      check(name, ok, buf, n * sizeof(double));
      free(buf);
    }
}

static void test_allgather(void) {
  MPI_Datatype triple; /* a contiguous derived type: moves as bytes on Cohort */
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  for (size_t c = 0; c < NUM(kCounts); ++c)
    for (int in_place = 0; in_place < 2; ++in_place)
      for (int derived = 0; derived < 2; ++derived) {
        size_t n = kCounts[c], elems = derived ? 3 * n : n;
        int *send = malloc(elems * sizeof(int) + 1), *recv = malloc(elems * size * sizeof(int) + 1);
        int *mine = in_place ? recv + rank * elems : send;
        for (size_t i = 0; i < elems; ++i) mine[i] = rank * 100000 + (int)i;
        MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)n, derived ? triple : MPI_INT, recv, (int)n,
                      derived ? triple : MPI_INT, MPI_COMM_WORLD);
        int ok = 1;
        for (int r = 0; r < size; ++r)
          for (size_t i = 0; i < elems; ++i) ok &= recv[r * elems + i] == r * 100000 + (int)i;
        char name[64];
        snprintf(name, sizeof name, "allgather-%s-%zu%s", derived ? "int3" : "int", n, in_place ? "-inplace" : "");
        check(name, ok, recv, elems * size * sizeof(int));
        free(send);
        free(recv);
      }
  MPI_Type_free(&triple);
}

static void test_reduce_scatter_block(void) {
  for (size_t t = 0; t < NUM(kTypes); t += 4)
    for (size_t c = 0; c < NUM(kCounts) - 1; ++c)
      for (int in_place = 0; in_place < 2; ++in_place) {
        const Type *type = &kTypes[t];
        size_t n = kCounts[c], total = n * size;
        char *send = malloc(total * type->size + 1), *recv = malloc(total * type->size + 1);
        for (size_t i = 0; i < total; ++i) store(type, in_place ? recv : send, i, value(MPI_SUM, type, rank, i));
        MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, (int)n, type->type, MPI_SUM, MPI_COMM_WORLD);
        int ok = 1;
        for (size_t i = 0; i < n; ++i) ok &= load(type, recv, i) == expected(MPI_SUM, type, rank * n + i);
        char name[64];
        snprintf(name, sizeof name, "reduce_scatter_block-%s-%zu%s", type->name, n, in_place ? "-inplace" : "");
        check(name, ok, recv, n * type->size);
        free(send);
        free(recv);
      }
}

static void test_alltoall(void) {
  for (size_t c = 0; c < NUM(kCounts) - 1; ++c)
    for (int in_place = 0; in_place < 2; ++in_place) {
      size_t n = kCounts[c], total = n * size;
      int *send = malloc(total * sizeof(int) + 1), *recv = malloc(total * sizeof(int) + 1);
      for (size_t i = 0; i < total; ++i) (in_place ? recv : send)[i] = rank * 1000000 + (int)i;
      MPI_Alltoall(in_place ? MPI_IN_PLACE : send, (int)n, MPI_INT, recv, (int)n, MPI_INT, MPI_COMM_WORLD);
      int ok = 1; /* block q of rank r's input lands in block r of rank q */
      for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < n; ++i) ok &= recv[r * n + i] == r * 1000000 + (int)(rank * n + i);
      char name[64];
      snprintf(name, sizeof name, "alltoall-int-%zu%s", n, in_place ? "-inplace" : "");
      check(name, ok, recv, total * sizeof(int));
      free(send);
      free(recv);
    }
}

/* One clock for every process of a host (Open MPI's MPI_Wtime counts from each process's
 * start). */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_barrier(void) {
  /* Rank r arrives r * 20 ms late; nobody may leave before the last one arrived. */
  int ok = 1;
  for (int k = 0; k < 3; ++k) {
    double wait_until = now() + rank * 0.02;
    while (now() < wait_until) {
    }
    double times[2] = {now(), 0};
    MPI_Barrier(MPI_COMM_WORLD);
    times[1] = now();
    double *all = malloc(2 * sizeof(double) * size);
    MPI_Allgather(times, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    double last_arrival = 0;
    for (int r = 0; r < size; ++r) last_arrival = all[2 * r] > last_arrival ? all[2 * r] : last_arrival;
    ok &= times[1] >= last_arrival;
    free(all);
  }
  check("barrier-3", ok, &ok, 0);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

/* Cases Cohort does not take: they must come back right from Open MPI's modules. */
static void test_fallbacks(void) {
  struct { double value; int rank; } pair = {(double)((rank * 5) % size), rank}, best;
  MPI_Allreduce(&pair, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  double max = 0;
  int at = 0;
  for (int r = 0; r < size; ++r)
    if ((double)((r * 5) % size) > max) max = (double)((r * 5) % size), at = r;
  double result[2] = {best.value, best.rank}; /* not the struct: its padding is never written */
  check("fallback-allreduce-maxloc", best.value == max && best.rank == at, result, sizeof result);

  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  int mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, op, MPI_COMM_WORLD);
  check("fallback-allreduce-userop", sum == size * (size + 1) / 2, &sum, sizeof sum);
  MPI_Op_free(&op);

  short s = (short)(rank + 1), ssum = 0;
  MPI_Allreduce(&s, &ssum, 1, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
  check("fallback-allreduce-short", ssum == size * (size + 1) / 2, &ssum, sizeof ssum);

  MPI_Datatype strided; /* every other int of 8 */
  MPI_Type_vector(4, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = rank == 0 ? i : -1;
  MPI_Bcast(buf, 1, strided, 0, MPI_COMM_WORLD);
  int ok = 1;
  for (int i = 0; i < 8; ++i) ok &= buf[i] == (i % 2 == 0 || rank == 0 ? i : -1);
  check("fallback-bcast-strided", ok, buf, sizeof buf);
  MPI_Type_free(&strided);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* LATE_RANK=r:s makes rank r come s seconds late to the first collective. */
  const char *late = getenv("LATE_RANK");
  int late_rank = -1, late_seconds = 0;
  if (late != NULL && sscanf(late, "%d:%d", &late_rank, &late_seconds) == 2 && rank == late_rank) {
    sleep((unsigned)late_seconds);
  }
  test_allreduce();
  test_reduce();
  test_bcast();
  test_allgather();
  test_reduce_scatter_block();
  test_alltoall();
  test_barrier();
  test_fallbacks();
  /* A communicator made and freed mid-run: its team must go with it. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int one = 1, count = 0, half_size = 0;
  MPI_Comm_size(half, &half_size);
  MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, half);
  check("split-allreduce", count == half_size, &count, sizeof count);
  MPI_Comm_free(&half);
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("summary: %d wrong on %d ranks\n", total, size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
