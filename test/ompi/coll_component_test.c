/* Runs the collectives the cohort component serves the way an unmodified application does:
 * each call once on MPI_COMM_WORLD (the component's, when it is loaded) and once on a duplicate
 * made with the info key coll_cohort_enable=false (Open MPI's own modules), on buffers filled
 * alike, then compares the whole of every buffer byte for byte: send and receive, the result
 * and what lies past it (sentinels that depend on rank and index, up to kGuard elements beyond
 * what the call may use), and the receive buffer that reduce's non-roots pass but MPI never
 * uses.  Each result is also checked against values computed here, and one digest line per case
 * and rank ("rank case digest", over the whole buffers) lets a run be compared with one on Open
 * MPI's modules.  The unsupported cases at the end (MPI_MAXLOC, a user op, MPI_SHORT, a strided
 * type) must fall back and still be right.  The ranks agree on the outcome through Open MPI's
 * communicator; exits 1 if anything was wrong. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size, wrong;
static MPI_Comm ompi; /* MPI_COMM_WORLD's twin that keeps Open MPI's own modules */

static uint64_t digest(uint64_t h, const void *data, size_t bytes) {
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
static const uint64_t kDigestStart = 1469598103934665603ull;

static void check(const char *name, int ok, const void *result, size_t bytes) {
  printf("%d %s %016llx%s\n", rank, name, (unsigned long long)digest(kDigestStart, result, bytes),
         ok ? "" : " WRONG");
  if (!ok) ++wrong;
}

/* The element types the tests use, with a way to store and load small integers. */
typedef struct {
  MPI_Datatype type;
  const char *name;
  size_t size;
  int is_unsigned;
} Type;
static const Type kTypes[] = {
    {MPI_INT, "int", sizeof(int), 0},
    {MPI_UNSIGNED, "unsigned", sizeof(unsigned), 1},
    {MPI_LONG_LONG, "llong", sizeof(long long), 0},
    {MPI_FLOAT, "float", sizeof(float), 0},
    {MPI_DOUBLE, "double", sizeof(double), 0},
    {MPI_INT8_T, "int8", 1, 0},
};
static const Type *const kInt = &kTypes[0];
static const Type *const kDouble = &kTypes[4];

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

#define NUM(a) (sizeof(a) / sizeof((a)[0]))
/* 65537 elements take every collective past its small-message path. */
static const size_t kCounts[] = {0, 1, 7, 1023, 65537};
static const MPI_Op kOps[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
static const char *const kOpNames[] = {"sum", "prod", "min", "max"};

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

/* ------------------------------------------------------------ buffers, in two copies */

enum Side { kSend, kRecv, kBcast };
static const char *const kSideNames[] = {"sendbuf", "recvbuf", "buffer"};
enum { kGuard = 8 }; /* elements past what a call may use */

/* One buffer of a call, in two copies filled alike: copy[0] for the call on MPI_COMM_WORLD,
 * copy[1] for the same call on Open MPI's communicator. */
typedef struct {
  enum Side side;
  const Type *type;
  size_t elems; /* allocated: the call's part and kGuard more */
  char *copy[2];
} Buffer;

/* Where no input belongs: a value no input or result takes (those are small, and near zero
 * for signed types), different per rank, buffer and index. */
static double sentinel(const Type *t, enum Side side, size_t i) {
  double v = 64 + (double)((rank * 13 + (int)side * 29 + i * 7) % 60);
  return t->is_unsigned ? v + 1000 : -v;
}

static Buffer buffer_new(enum Side side, const Type *type, size_t elems) {
  Buffer b = {side, type, elems + kGuard, {NULL, NULL}};
  for (int k = 0; k < 2; ++k) {
    b.copy[k] = malloc(b.elems * type->size);
    for (size_t i = 0; i < b.elems; ++i) store(type, b.copy[k], i, sentinel(type, side, i));
  }
  return b;
}

static void put(Buffer *b, size_t i, double v) {
  for (int k = 0; k < 2; ++k) store(b->type, b->copy[k], i, v);
}

/* The component's copy, element i. */
static double got(const Buffer *b, size_t i) { return load(b->type, b->copy[0], i); }

/* ------------------------------------------------------------ cases */

typedef struct {
  const char *coll;     /* "reduce_scatter_block" */
  const Type *type;     /* of the buffers' elements */
  MPI_Datatype derived; /* what the call passes instead of type->type, or MPI_DATATYPE_NULL */
  int op;               /* index in kOps, -1 for data movement */
  size_t count;
  int root; /* -1 where the collective has none */
  int in_place;
} Case;

static MPI_Datatype datatype(const Case *c) {
  return c->derived != MPI_DATATYPE_NULL ? c->derived : c->type->type;
}

/* "allreduce-int-sum-7-inplace": the case in digest lines. */
static void case_name(const Case *c, char *out, size_t n) {
  int len =
      snprintf(out, n, "%s-%s", c->coll, c->derived != MPI_DATATYPE_NULL ? "int3" : c->type->name);
  if (c->op >= 0) len += snprintf(out + len, n - len, "-%s", kOpNames[c->op]);
  len += snprintf(out + len, n - len, "-%zu", c->count);
  if (c->root >= 0) len += snprintf(out + len, n - len, "-root%d", c->root);
  if (c->in_place) snprintf(out + len, n - len, "-inplace");
}

/* "reduce int sum count 7 root 2, not in place": the case in failure lines. */
static void case_text(const Case *c, char *out, size_t n) {
  int len =
      snprintf(out, n, "%s %s", c->coll, c->derived != MPI_DATATYPE_NULL ? "int3" : c->type->name);
  if (c->op >= 0) len += snprintf(out + len, n - len, " %s", kOpNames[c->op]);
  len += snprintf(out + len, n - len, " count %zu", c->count);
  if (c->root >= 0) len += snprintf(out + len, n - len, " root %d", c->root);
  snprintf(out + len, n - len, ", %s", c->in_place ? "in place" : "not in place");
}

/* Compares the component's copy with Open MPI's byte for byte; names the first difference. */
static int same_as_ompi(const Case *c, const Buffer *b) {
  const unsigned char *mine = (const unsigned char *)b->copy[0];
  const unsigned char *theirs = (const unsigned char *)b->copy[1];
  size_t bytes = b->elems * b->type->size, at = 0;
  while (at < bytes && mine[at] == theirs[at]) ++at;
  if (at == bytes) return 1;
  char text[128];
  case_text(c, text, sizeof text);
  size_t i = at / b->type->size;
  printf(
      "FAIL %s: rank %d %s[%zu] (of %zu elements + %d guard) differs from Open MPI's: "
      "expected %g, got %g\n",
      text, rank, kSideNames[b->side], i, b->elems - kGuard, kGuard, load(b->type, b->copy[1], i),
      got(b, i));
  return 0;
}

typedef void (*CallFn)(const Case *c, void *send, void *recv, MPI_Comm comm);

/* The call on MPI_COMM_WORLD, then on Open MPI's communicator, each on its copies. */
static void run_twice(const Case *c, CallFn call, Buffer *send, Buffer *recv) {
  for (int k = 0; k < 2; ++k) {
    call(c, send != NULL ? send->copy[k] : NULL, recv->copy[k], k == 0 ? MPI_COMM_WORLD : ompi);
  }
}

/* Compares every buffer with Open MPI's, prints "rank case digest" (WRONG when the result was
 * not the one computed here or a buffer differs) and frees the buffers. */
static void finish_case(const Case *c, int result_right, Buffer *send, Buffer *recv) {
  char name[96];
  case_name(c, name, sizeof name);
  if (!result_right) {
    char text[128];
    case_text(c, text, sizeof text);
    printf("FAIL %s: rank %d: %s does not hold the values computed here\n", text, rank,
           kSideNames[recv->side]);
  }
  int ok = result_right;
  uint64_t h = kDigestStart;
  Buffer *const buffers[] = {send, recv};
  for (size_t k = 0; k < NUM(buffers); ++k) {
    if (buffers[k] == NULL) continue;
    ok &= same_as_ompi(c, buffers[k]);
    h = digest(h, buffers[k]->copy[0], buffers[k]->elems * buffers[k]->type->size);
    free(buffers[k]->copy[0]);
    free(buffers[k]->copy[1]);
  }
  printf("%d %s %016llx%s\n", rank, name, (unsigned long long)h, ok ? "" : " WRONG");
  if (!ok) ++wrong;
}

/* ------------------------------------------------------------ reductions */

static void call_allreduce(const Case *c, void *send, void *recv, MPI_Comm comm) {
  MPI_Allreduce(c->in_place ? MPI_IN_PLACE : send, recv, (int)c->count, datatype(c), kOps[c->op],
                comm);
}

static void test_allreduce(void) {
  for (size_t t = 0; t < NUM(kTypes); ++t)
    for (int o = 0; o < (int)NUM(kOps); ++o)
      for (size_t n = 0; n < NUM(kCounts); ++n)
        for (int in_place = 0; in_place < 2; ++in_place) {
          const Case c = {.coll = "allreduce",
                          .type = &kTypes[t],
                          .derived = MPI_DATATYPE_NULL,
                          .op = o,
                          .count = kCounts[n],
                          .root = -1,
                          .in_place = in_place};
          Buffer send = buffer_new(kSend, c.type, c.count),
                 recv = buffer_new(kRecv, c.type, c.count);
          Buffer *input = in_place ? &recv : &send;
          for (size_t i = 0; i < c.count; ++i) put(input, i, value(kOps[o], c.type, rank, i));
          run_twice(&c, call_allreduce, &send, &recv);
          int right = 1;
          for (size_t i = 0; i < c.count; ++i)
            right &= got(&recv, i) == expected(kOps[o], c.type, i);
          finish_case(&c, right, &send, &recv);
        }
}

/* In place only at the root (MPI_IN_PLACE is the root's alone); the receive buffer of the
 * others, which MPI does not use, is passed filled and must come back as it was. */
static void call_reduce(const Case *c, void *send, void *recv, MPI_Comm comm) {
  int in_place = c->in_place && rank == c->root;
  MPI_Reduce(in_place ? MPI_IN_PLACE : send, recv, (int)c->count, datatype(c), kOps[c->op], c->root,
             comm);
}

static void test_reduce(void) {
  const int roots[] = {0, size - 1};
  for (size_t t = 0; t < NUM(kTypes); ++t)
    for (int o = 0; o < (int)NUM(kOps); ++o)
      for (size_t n = 0; n < NUM(kCounts); ++n)
        for (size_t k = 0; k < NUM(roots); ++k)
          for (int in_place = 0; in_place < 2; ++in_place) {
            const int root = roots[k];
            const Case c = {.coll = "reduce",
                            .type = &kTypes[t],
                            .derived = MPI_DATATYPE_NULL,
                            .op = o,
                            .count = kCounts[n],
                            .root = root,
                            .in_place = in_place};
            Buffer send = buffer_new(kSend, c.type, c.count),
                   recv = buffer_new(kRecv, c.type, c.count);
            Buffer *input = in_place && rank == root ? &recv : &send;
            for (size_t i = 0; i < c.count; ++i) put(input, i, value(kOps[o], c.type, rank, i));
            run_twice(&c, call_reduce, &send, &recv);
            int right = 1;
            for (size_t i = 0; rank == root && i < c.count; ++i)
              right &= got(&recv, i) == expected(kOps[o], c.type, i);
            finish_case(&c, right, &send, &recv);
          }
}

/* MPI's in place: the input is the whole receive buffer, the result goes to its first count
 * elements and the rest stays as it was. */
static void call_reduce_scatter_block(const Case *c, void *send, void *recv, MPI_Comm comm) {
  MPI_Reduce_scatter_block(c->in_place ? MPI_IN_PLACE : send, recv, (int)c->count, datatype(c),
                           kOps[c->op], comm);
}

static void test_reduce_scatter_block(void) {
  for (size_t t = 0; t < NUM(kTypes); ++t)
    for (int o = 0; o < (int)NUM(kOps); ++o)
      for (size_t n = 0; n < NUM(kCounts); ++n)
        for (int in_place = 0; in_place < 2; ++in_place) {
          const Case c = {.coll = "reduce_scatter_block",
                          .type = &kTypes[t],
                          .derived = MPI_DATATYPE_NULL,
                          .op = o,
                          .count = kCounts[n],
                          .root = -1,
                          .in_place = in_place};
          size_t total = c.count * size;
          Buffer send = buffer_new(kSend, c.type, total);
          Buffer recv = buffer_new(kRecv, c.type, in_place ? total : c.count);
          Buffer *input = in_place ? &recv : &send;
          for (size_t i = 0; i < total; ++i) put(input, i, value(kOps[o], c.type, rank, i));
          run_twice(&c, call_reduce_scatter_block, &send, &recv);
          int right = 1;
          for (size_t i = 0; i < c.count; ++i)
            right &= got(&recv, i) == expected(kOps[o], c.type, rank * c.count + i);
          for (size_t i = c.count; in_place && i < total; ++i)
            right &= got(&recv, i) == value(kOps[o], c.type, rank, i);
          finish_case(&c, right, &send, &recv);
        }
}

/* ------------------------------------------------------------ data movement */

static void call_bcast(const Case *c, void *send, void *recv, MPI_Comm comm) {
  (void)send;
  MPI_Bcast(recv, (int)c->count, datatype(c), c->root, comm);
}

static void test_bcast(void) {
  for (size_t t = 0; t < 2; ++t)
    for (size_t n = 0; n < NUM(kCounts); ++n)
      for (int root = 0; root < size; ++root) {
        const Case c = {.coll = "bcast",
                        .type = t == 0 ? kDouble : kInt,
                        .derived = MPI_DATATYPE_NULL,
                        .op = -1,
                        .count = kCounts[n],
                        .root = root,
                        .in_place = 0};
        Buffer buf = buffer_new(kBcast, c.type, c.count);
        for (size_t i = 0; rank == root && i < c.count; ++i) put(&buf, i, (double)(i * 3 + root));
        run_twice(&c, call_bcast, NULL, &buf);
        int right = 1;
        for (size_t i = 0; i < c.count; ++i) right &= got(&buf, i) == (double)(i * 3 + root);
        finish_case(&c, right, NULL, &buf);
      }
}

static void call_allgather(const Case *c, void *send, void *recv, MPI_Comm comm) {
  MPI_Allgather(c->in_place ? MPI_IN_PLACE : send, (int)c->count, datatype(c), recv, (int)c->count,
                datatype(c), comm);
}

static void test_allgather(void) {
  MPI_Datatype triple; /* a contiguous derived type: moves as bytes on Cohort */
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  for (size_t n = 0; n < NUM(kCounts); ++n)
    for (int in_place = 0; in_place < 2; ++in_place)
      for (int derived = 0; derived < 2; ++derived) {
        const Case c = {.coll = "allgather",
                        .type = kInt,
                        .derived = derived ? triple : MPI_DATATYPE_NULL,
                        .op = -1,
                        .count = kCounts[n],
                        .root = -1,
                        .in_place = in_place};
        size_t elems = derived ? 3 * c.count : c.count;
        Buffer send = buffer_new(kSend, kInt, elems), recv = buffer_new(kRecv, kInt, elems * size);
        /* In place, this rank's block is already in its slot of the receive buffer. */
        for (size_t i = 0; i < elems; ++i)
          put(in_place ? &recv : &send, (in_place ? rank * elems : 0) + i, rank * 100000 + (int)i);
        run_twice(&c, call_allgather, &send, &recv);
        int right = 1;
        for (int r = 0; r < size; ++r)
          for (size_t i = 0; i < elems; ++i)
            right &= got(&recv, r * elems + i) == r * 100000 + (int)i;
        finish_case(&c, right, &send, &recv);
      }
  MPI_Type_free(&triple);
}

static void call_alltoall(const Case *c, void *send, void *recv, MPI_Comm comm) {
  MPI_Alltoall(c->in_place ? MPI_IN_PLACE : send, (int)c->count, datatype(c), recv, (int)c->count,
               datatype(c), comm);
}

static void test_alltoall(void) {
  for (size_t t = 0; t < 2; ++t)
    for (size_t n = 0; n < NUM(kCounts); ++n)
      for (int in_place = 0; in_place < 2; ++in_place) {
        const Case c = {.coll = "alltoall",
                        .type = t == 0 ? kInt : kDouble,
                        .derived = MPI_DATATYPE_NULL,
                        .op = -1,
                        .count = kCounts[n],
                        .root = -1,
                        .in_place = in_place};
        size_t total = c.count * size;
        Buffer send = buffer_new(kSend, c.type, total), recv = buffer_new(kRecv, c.type, total);
        for (size_t i = 0; i < total; ++i)
          put(in_place ? &recv : &send, i, rank * 1000000 + (int)i);
        run_twice(&c, call_alltoall, &send, &recv);
        int right = 1; /* block q of rank r's input lands in block r of rank q */
        for (int r = 0; r < size; ++r)
          for (size_t i = 0; i < c.count; ++i)
            right &= got(&recv, r * c.count + i) == r * 1000000 + (int)(rank * c.count + i);
        finish_case(&c, right, &send, &recv);
      }
}

/* ------------------------------------------------------------ barrier, fallbacks */

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
    MPI_Allgather(times, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, ompi);
    double last_arrival = 0;
    for (int r = 0; r < size; ++r)
      last_arrival = all[2 * r] > last_arrival ? all[2 * r] : last_arrival;
    ok &= times[1] >= last_arrival;
    free(all);
  }
  if (!ok) printf("FAIL barrier: rank %d left before the last rank arrived\n", rank);
  check("barrier-3", ok, &ok, 0);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

/* Cases Cohort does not take: they must come back right from Open MPI's modules. */
static void test_fallbacks(void) {
  struct {
    double value;
    int rank;
  } pair = {(double)((rank * 5) % size), rank}, best;
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

/* A communicator made and freed mid-run: its team must go with it. */
static void test_split(void) {
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int one = 1, count = 0, half_size = 0;
  MPI_Comm_size(half, &half_size);
  MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, half);
  check("split-allreduce", count == half_size, &count, sizeof count);
  MPI_Comm_free(&half);
}

/* The first collective is the component's (a rank late to it is what LATE_RANK tests); Open
 * MPI's communicator is made after it. */
static void open_communicators(void) {
  int one = 1, ranks = 0;
  MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  check("first-allreduce", ranks == size, &ranks, sizeof ranks);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "coll_cohort_enable", "false");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ompi);
  MPI_Info_free(&info);
  MPI_Comm_set_name(ompi, "test-ompi");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* LATE_RANK=r:s makes rank r come s seconds late to the first collective. */
  const char *late = getenv("LATE_RANK");
  int late_rank = -1, late_seconds = 0;
  if (late != NULL && sscanf(late, "%d:%d", &late_rank, &late_seconds) == 2 && rank == late_rank) {
    sleep((unsigned)late_seconds);
  }
  open_communicators();
  test_allreduce();
  test_reduce();
  test_bcast();
  test_allgather();
  test_reduce_scatter_block();
  test_alltoall();
  test_barrier();
  test_fallbacks();
  test_split();
  /* Every rank decides alike, on Open MPI's communicator, whatever went wrong where. */
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, ompi);
  if (rank == 0) printf("summary: %d wrong on %d ranks\n", total, size);
  MPI_Comm_free(&ompi);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
