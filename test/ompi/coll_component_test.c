/* Runs every MPI-3.1 collective on intra-communicators the cohort component serves the way an
 * unmodified application does, blocking and nonblocking: each call once on MPI_COMM_WORLD (the
 * component's, when it is loaded) and once on a duplicate made with the info key
 * coll_cohort_enable=false (Open MPI's own modules), on buffers filled alike, then compares the
 * whole of every buffer byte for byte: send and receive, the result and what lies past it
 * (sentinels that depend on rank and index, up to kGuard elements beyond what the call may
 * use, and the gaps between the blocks of the v-collectives), and the buffers that rooted
 * collectives' non-roots pass but MPI never uses.  Each result is also checked, element by
 * element over the whole receive buffer, against values computed here, and every send buffer
 * must come back as it went in.  Exscan's rank 0 receives what MPI leaves undefined: neither
 * compared nor digested.  The blocking forms run over counts 0, 1, 7, 1023 and 65537 (per-rank
 * counts derived from them, some zero, for the v-collectives), several types, all four ops,
 * roots 0 and size - 1, in place and not; each nonblocking form runs once per count completed
 * by MPI_Wait, and again in groups of all of them posted back to back with a blocking call
 * before MPI_Waitall or MPI_Wait in the reverse order; two are polled with MPI_Test.  One
 * digest line per case and rank ("rank case digest", over the whole buffers) lets a run be
 * compared with one on Open MPI's modules; the summary line counts them.  The unsupported cases
 * at the end (MPI_MAXLOC, a user op, MPI_SHORT, a strided type) must fall back and still be
 * right.  COLL_TEST_MEMORY=device (or mixed: odd ranks only) gives MPI_COMM_WORLD's calls CUDA
 * device memory, uploaded before each call and downloaded after it, with the same comparisons.
 * The ranks agree on the outcome through Open MPI's communicator; exits 1 if anything was
 * wrong. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_component_device.h"

static int rank, size, wrong;
static int cases;     /* digest lines printed */
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
  ++cases;
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
/* 65537 elements take every collective past its small-message path.  COLL_TEST_COUNTS (a
 * comma-separated list of up to 8) replaces them, e.g. 0,1,7,4099,1048576 on a GPU. */
static size_t kCounts[8] = {0, 1, 7, 1023, 65537};
static size_t num_counts = 5;

static void choose_counts(void) {
  const char *list = getenv("COLL_TEST_COUNTS");
  if (list == NULL || *list == '\0') return;
  num_counts = 0;
  for (const char *p = list;
       p != NULL && *p != '\0' && num_counts < sizeof kCounts / sizeof kCounts[0];) {
    char *end = NULL;
    kCounts[num_counts++] = (size_t)strtoull(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) {
      printf("FAIL COLL_TEST_COUNTS=%s: a comma-separated list of counts\n", list);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    p = *end == ',' ? end + 1 : NULL;
  }
  if (rank == 0) printf("counts: %s\n", list);
}
static const MPI_Op kOps[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
static const char *const kOpNames[] = {"sum", "prod", "min", "max"};

/* Rank r's element i: small integers, so every sum and product is exact in every type. */
static double value(MPI_Op op, const Type *t, int r, size_t i) {
  if (op == MPI_PROD) return 1 + (double)((r + i) % 2);
  double v = (double)((r * 7 + i * 3) % 11);
  return t->is_unsigned ? v : v - 5;
}

/* ------------------------------------------------------------ device memory */

/* COLL_TEST_MEMORY=device puts MPI_COMM_WORLD's copy of every buffer in CUDA device memory,
 * =mixed only on odd ranks (even ranks keep host memory); Open MPI's copy stays in host memory
 * (coll_component_device.h). */

/* ------------------------------------------------------------ buffers, in two copies */

enum Side { kSend, kRecv, kBcast };
static const char *const kSideNames[] = {"sendbuf", "recvbuf", "buffer"};
enum { kGuard = 8 }; /* elements past what a call may use */

/* One buffer of a call, in two copies filled alike: copy[0] for the call on MPI_COMM_WORLD,
 * copy[1] for the same call on Open MPI's communicator.  Where this rank's buffers are device
 * memory, MPI_COMM_WORLD's call gets `device` instead, copy[0] uploaded before the call and
 * downloaded after it.  The call passes `dtype` for it: the case's type, or (cases of layouts
 * that differ between ranks) a type with the same type signature laid out otherwise; where that
 * type has gaps (`spread` 2: one element, then one it skips), the call's element i is the
 * buffer's element 2i, and the gaps must come back as they went. */
typedef struct {
  enum Side side;
  const Type *type;
  size_t part;   /* elements the call may use */
  size_t spread; /* 1, or 2 for a type whose elements lie every other one */
  size_t elems;  /* allocated: the part, spread, and kGuard more */
  MPI_Datatype dtype;
  char *copy[2];
  char *device;
} Buffer;

/* Where no input belongs: a value no input or result takes (those are small, and near zero
 * for signed types), different per rank, buffer and index. */
static double sentinel(const Type *t, enum Side side, size_t i) {
  double v = 64 + (double)((rank * 13 + (int)side * 29 + i * 7) % 60);
  return t->is_unsigned ? v + 1000 : -v;
}

/* Where the call's element i lies in the buffer: spread out over the part, then the guard. */
static size_t at_element(const Buffer *b, size_t i) {
  return i < b->part ? i * b->spread : b->part * b->spread + (i - b->part);
}

/* Per element type, a type of one element whose extent is two: the data, then a gap. */
static MPI_Datatype gapped_types[NUM(kTypes)];

static void make_layout_types(void) {
  for (size_t t = 0; t < NUM(kTypes); ++t) {
    MPI_Type_create_resized(kTypes[t].type, 0, 2 * (MPI_Aint)kTypes[t].size, &gapped_types[t]);
    MPI_Type_commit(&gapped_types[t]);
  }
}

static void free_layout_types(void) {
  for (size_t t = 0; t < NUM(kTypes); ++t) MPI_Type_free(&gapped_types[t]);
}

/* What the call on copy k is given. */
static void *arg(const Buffer *b, int k) {
  return k == 0 && b->device != NULL ? b->device : b->copy[k];
}

static void upload(const Buffer *b) {
  if (b->device != NULL) devmem_copy(b->device, b->copy[0], b->elems * b->type->size);
}

static void download(Buffer *b) {
  if (b->device != NULL) devmem_copy(b->copy[0], b->device, b->elems * b->type->size);
}

/* The call's element i, in both copies. */
static void put(Buffer *b, size_t i, double v) {
  for (int k = 0; k < 2; ++k) store(b->type, b->copy[k], at_element(b, i), v);
}

/* ------------------------------------------------------------ cases */

/* How a case is called and completed: the blocking form, or the nonblocking one completed by
 * MPI_Wait, by MPI_Test polled until done, or in a group of different nonblocking
 * collectives completed by MPI_Waitall or by MPI_Wait in the reverse order of posting. */
enum Form { kBlocking, kWait, kTest, kWaitall, kWaitReverse };
static const char *const kFormNames[] = {"", "", "-test", "-waitall", "-waitreverse"};
static const char *const kFormTexts[] = {"", ", MPI_Wait", ", MPI_Test polled", ", MPI_Waitall",
                                         ", MPI_Wait in reverse order"};

typedef struct {
  const char *coll;     /* "reduce_scatter_block": the blocking form's name */
  const Type *type;     /* of the buffers' elements */
  MPI_Datatype derived; /* what the call passes instead of type->type, or MPI_DATATYPE_NULL */
  int op;               /* index in kOps, -1 for data movement */
  size_t count;         /* the v-collectives derive each rank's counts from it */
  int root;             /* -1 where the collective has none */
  int in_place;
  enum Form form;
  int ignored; /* what MPI lets this rank's call leave out is passed as junk: MPI_DATATYPE_NULL,
                  a count of -1, NULL buffers and arrays (the send side in place, a gather's
                  receive side and a scatter's send side off the root, reduce's receive buffer
                  off the root) */
  int layouts; /* the ranks' types differ (side_type), and the odd ranks pass their v-collective
                  blocks from a pointer past their first ones: negative displacements */
} Case;

/* "iallreduce-int-sum-7-inplace-waitall": the case in digest lines. */
static void case_name(const Case *c, char *out, size_t n) {
  int len = snprintf(out, n, "%s%s-%s", c->form == kBlocking ? "" : "i", c->coll,
                     c->derived != MPI_DATATYPE_NULL ? "int3" : c->type->name);
  if (c->op >= 0) len += snprintf(out + len, n - len, "-%s", kOpNames[c->op]);
  len += snprintf(out + len, n - len, "-%zu", c->count);
  if (c->root >= 0) len += snprintf(out + len, n - len, "-root%d", c->root);
  if (c->in_place) len += snprintf(out + len, n - len, "-inplace");
  if (c->ignored) len += snprintf(out + len, n - len, "-ignored");
  if (c->layouts) len += snprintf(out + len, n - len, "-layouts");
  snprintf(out + len, n - len, "%s", kFormNames[c->form]);
}

/* "ireduce int sum count 7 root 2, not in place, MPI_Wait": the case in failure lines. */
static void case_text(const Case *c, char *out, size_t n) {
  int len = snprintf(out, n, "%s%s %s", c->form == kBlocking ? "" : "i", c->coll,
                     c->derived != MPI_DATATYPE_NULL ? "int3" : c->type->name);
  if (c->op >= 0) len += snprintf(out + len, n - len, " %s", kOpNames[c->op]);
  len += snprintf(out + len, n - len, " count %zu", c->count);
  if (c->root >= 0) len += snprintf(out + len, n - len, " root %d", c->root);
  snprintf(out + len, n - len, ", %s%s%s%s", c->in_place ? "in place" : "not in place",
           c->ignored ? ", junk in the arguments MPI ignores" : "",
           c->layouts ? ", layouts that differ between ranks" : "", kFormTexts[c->form]);
}

struct Coll;

/* One call's buffers and, for the v-collectives, its counts and displacements in elements (per
 * rank for gatherv, scatterv, allgatherv and reduce_scatter, per peer for alltoallv).  All of
 * it stays until the call is complete, as MPI requires of nonblocking calls. */
typedef struct {
  Case c;
  const struct Coll *coll;
  Buffer send, recv;               /* send.copy[0] is NULL where the call has no send buffer */
  char *send_before, *recv_before; /* the component's copies as filled, before the call */
  size_t undefined; /* leading receive elements MPI leaves undefined (exscan's rank 0) */
  int *scounts, *sdispls, *rcounts, *rdispls;
  /* What the call passes: with `layouts`, the odd ranks pass their v-collective sides from
   * `shift` elements into the buffer, with displacements `shift` lower (some negative). */
  size_t sshift, rshift;
  int *sdispls_arg, *rdispls_arg;
} Job;

/* A collective in both forms: setup makes the buffers and fills the inputs, call makes the
 * blocking call (req NULL) or posts the nonblocking one on copy k, expect writes the values the
 * receive buffer must hold where the call changes it (want holds it as it was before). */
typedef struct Coll {
  const char *name;
  void (*setup)(Job *j);
  void (*call)(const Job *j, int k, MPI_Comm comm, MPI_Request *req);
  void (*expect)(const Job *j, double *want);
} Coll;

/* The blocking call, or the nonblocking one with the same arguments. */
#define BLOCKING_OR_NOT(blocking, nonblocking, ...) \
  (void)(req != NULL ? nonblocking(__VA_ARGS__, comm, req) : blocking(__VA_ARGS__, comm))

/* The type this rank's call passes for a side, and how far apart its elements lie.  With
 * `layouts` (data movement only), ranks differ: a side has gaps on every other rank (the send
 * side and bcast's buffer on even ranks, the receive side on odd ones), so a rooted call's root
 * and the other ranks differ too. */
static MPI_Datatype side_type(const Case *c, enum Side side, size_t *spread) {
  const size_t t = (size_t)(c->type - kTypes);
  *spread = 1;
  if (c->derived != MPI_DATATYPE_NULL) return c->derived;
  if (!c->layouts || c->op >= 0) return c->type->type;
  if ((rank + (side != kRecv)) % 2 == 1) {
    *spread = 2;
    return gapped_types[t];
  }
  return c->type->type;
}

static Buffer buffer_new(const Job *j, enum Side side, size_t part) {
  Buffer b = {side, j->c.type, part, 1, 0, MPI_DATATYPE_NULL, {NULL, NULL}, NULL};
  b.dtype = side_type(&j->c, side, &b.spread);
  b.elems = part * b.spread + kGuard;
  for (int k = 0; k < 2; ++k) {
    b.copy[k] = malloc(b.elems * b.type->size);
    for (size_t i = 0; i < b.elems; ++i) store(b.type, b.copy[k], i, sentinel(b.type, side, i));
  }
  if (devmem_on_device) b.device = devmem_alloc(b.elems * b.type->size);
  return b;
}

static char *snapshot(const Buffer *b) {
  if (b->copy[0] == NULL) return NULL;
  char *copy = malloc(b->elems * b->type->size);
  memcpy(copy, b->copy[0], b->elems * b->type->size);
  return copy;
}

/* The displacements the call passes, `shift` lower than the buffer's own (odd ranks, with
 * `layouts`): the call then gets the buffer from `shift` elements on. */
static void shift_displacements(Job *j) {
  const int shifted = j->c.layouts && rank % 2 == 1;
  j->sshift = shifted ? j->send.part / 2 : 0;
  j->rshift = shifted ? j->recv.part / 2 : 0;
  for (int r = 0; r < size; ++r) {
    j->sdispls_arg[r] = j->sdispls[r] - (int)j->sshift;
    j->rdispls_arg[r] = j->rdispls[r] - (int)j->rshift;
  }
}

static Job *job_new(const Coll *coll, Case c) {
  Job *j = calloc(1, sizeof *j);
  j->c = c;
  j->c.coll = coll->name;
  j->coll = coll;
  j->scounts = calloc(6 * (size_t)size, sizeof(int));
  j->sdispls = j->scounts + size;
  j->rcounts = j->scounts + 2 * size;
  j->rdispls = j->scounts + 3 * size;
  j->sdispls_arg = j->scounts + 4 * size;
  j->rdispls_arg = j->scounts + 5 * size;
  coll->setup(j);
  shift_displacements(j);
  j->send_before = snapshot(&j->send);
  j->recv_before = snapshot(&j->recv);
  upload(&j->send);
  upload(&j->recv);
  return j;
}

/* Compares the component's copy with Open MPI's byte for byte from element `from` on; names the
 * first difference. */
static int same_as_ompi(const Case *c, const Buffer *b, size_t from) {
  const unsigned char *mine = (const unsigned char *)b->copy[0];
  const unsigned char *theirs = (const unsigned char *)b->copy[1];
  size_t bytes = b->elems * b->type->size, at = at_element(b, from) * b->type->size;
  while (at < bytes && mine[at] == theirs[at]) ++at;
  if (at == bytes) return 1;
  char text[160];
  case_text(c, text, sizeof text);
  size_t i = at / b->type->size;
  printf(
      "FAIL %s: rank %d %s element %zu (of %zu + %d guard) differs from Open MPI's: "
      "expected %g, got %g\n",
      text, rank, kSideNames[b->side], i, b->elems - kGuard, kGuard, load(b->type, b->copy[1], i),
      load(b->type, b->copy[0], i));
  return 0;
}

/* Whether the component's receive buffer holds, everywhere but where MPI leaves it undefined,
 * what the call must leave there, and its send buffer what was put in it; names the first
 * difference. */
static int right_values(const Job *j) {
  char text[160];
  case_text(&j->c, text, sizeof text);
  const Buffer *send = &j->send, *recv = &j->recv;
  if (send->copy[0] != NULL &&
      memcmp(send->copy[0], j->send_before, send->elems * send->type->size)) {
    printf("FAIL %s: rank %d: the call changed its %s\n", text, rank, kSideNames[send->side]);
    return 0;
  }
  if (recv->copy[0] == NULL) return 1;
  /* The call's elements as expect() wants them, then every element of the buffer: those, and
   * the gaps and the guard as they were. */
  const size_t logical = recv->part + kGuard;
  double *want = malloc(logical * sizeof(double)), *whole = malloc(recv->elems * sizeof(double));
  for (size_t i = 0; i < logical; ++i)
    want[i] = load(recv->type, j->recv_before, at_element(recv, i));
  j->coll->expect(j, want);
  for (size_t e = 0; e < recv->elems; ++e) whole[e] = load(recv->type, j->recv_before, e);
  for (size_t i = 0; i < logical; ++i) whole[at_element(recv, i)] = want[i];
  size_t e = at_element(recv, j->undefined);
  while (e < recv->elems && load(recv->type, recv->copy[0], e) == whole[e]) ++e;
  int right = e == recv->elems;
  if (!right)
    printf(
        "FAIL %s: rank %d %s element %zu (of %zu + %d guard, every %zu a result): expected %g, "
        "got %g\n",
        text, rank, kSideNames[recv->side], e, recv->elems - kGuard, kGuard, recv->spread, whole[e],
        load(recv->type, recv->copy[0], e));
  free(want);
  free(whole);
  return right;
}

static void buffer_free(Buffer *b) {
  free(b->copy[0]);
  free(b->copy[1]);
  devmem_free(b->device);
}

/* Checks the values, compares every buffer with Open MPI's, prints "rank case digest" (WRONG
 * when anything was wrong) and frees the job. */
static void job_finish(Job *j) {
  download(&j->send);
  download(&j->recv);
  int ok = right_values(j);
  uint64_t h = kDigestStart;
  Buffer *const buffers[] = {&j->send, &j->recv};
  for (size_t k = 0; k < NUM(buffers); ++k) {
    const Buffer *b = buffers[k];
    if (b->copy[0] == NULL) continue;
    size_t from = b == &j->recv ? j->undefined : 0;
    ok &= same_as_ompi(&j->c, b, from);
    const size_t first = at_element(b, from);
    h = digest(h, b->copy[0] + first * b->type->size, (b->elems - first) * b->type->size);
  }
  char name[128];
  case_name(&j->c, name, sizeof name);
  printf("%d %s %016llx%s\n", rank, name, (unsigned long long)h, ok ? "" : " WRONG");
  ++cases;
  if (!ok) ++wrong;
  buffer_free(&j->send);
  buffer_free(&j->recv);
  free(j->send_before);
  free(j->recv_before);
  free(j->scounts);
  free(j);
}

static MPI_Comm comm_of(int k) { return k == 0 ? MPI_COMM_WORLD : ompi; }

/* One case: its call on MPI_COMM_WORLD, then on Open MPI's communicator, each completed as its
 * form says. */
static void run_case(const Coll *coll, Case c) {
  Job *j = job_new(coll, c);
  for (int k = 0; k < 2; ++k) {
    if (c.form == kBlocking) {
      coll->call(j, k, comm_of(k), NULL);
      continue;
    }
    MPI_Request req;
    coll->call(j, k, comm_of(k), &req);
    for (int done = 0; c.form == kTest && !done;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (c.form != kTest) MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  job_finish(j);
}

/* ------------------------------------------------------------ layouts of the v-collectives */

/* Rank r's count in a v-collective of base count n: none for some ranks, a little more than n
 * (and different per rank) for the others. */
static int vcount(size_t n, int r) { return r % 3 == 1 ? 0 : (int)n + (n > 0 ? r : 0); }

/* What alltoallv's rank `from` sends to `to`: none for some pairs, the same both ways where
 * `symmetric` (in place, MPI needs it). */
static int pair_count(size_t n, int from, int to, int symmetric) {
  int a = from, b = to;
  if (symmetric && a > b) a = to, b = from;
  return (a + 2 * b) % 3 == 1 ? 0 : (int)n + (n > 0 ? (2 * a + b) % 4 : 0);
}

/* Displacements for counts, in the reverse of rank order with gaps between the blocks;
 * returns the elements they span. */
static size_t layout(const int *counts, int *displs) {
  size_t at = 2;
  for (int r = size - 1; r >= 0; --r) {
    displs[r] = (int)at;
    at += (size_t)counts[r] + 1 + r % 2;
  }
  return at;
}

static int sum_below(const int *counts, int r) {
  int sum = 0;
  for (int q = 0; q < r; ++q) sum += counts[q];
  return sum;
}

/* Rank r's element i in data movement (exact in every type the cases use). */
static double payload(int r, size_t i) { return r * 100000 + (double)i; }
/* Element i of what alltoall(v)'s rank `from` sends to `to`. */
static double pair_payload(int from, int to, size_t i) {
  return from * 1000000 + to * 100000 + (double)i;
}

/* The reduction of ranks [from, to)'s element i. */
static double reduced(MPI_Op op, const Type *t, int from, int to, size_t i) {
  double e = value(op, t, from, i);
  for (int r = from + 1; r < to; ++r) {
    double v = value(op, t, r, i);
    if (op == MPI_SUM) e += v;
    if (op == MPI_PROD) e *= v;
    if (op == MPI_MIN) e = v < e ? v : e;
    if (op == MPI_MAX) e = v > e ? v : e;
  }
  return e;
}

static Buffer no_buffer(void) {
  return (Buffer){kSend, kInt, 0, 1, 0, MPI_DATATYPE_NULL, {NULL, NULL}, NULL};
}

static void fill_values(Buffer *b, size_t n, MPI_Op op) {
  for (size_t i = 0; i < n; ++i) put(b, i, value(op, b->type, rank, i));
}

/* This rank's send buffer on copy k, or MPI_IN_PLACE. */
static const void *send_arg(const Job *j, int k, int in_place) {
  return in_place ? MPI_IN_PLACE : arg(&j->send, k);
}

/* What the call passes for an argument MPI ignores here (`ignored`: junk where the case says
 * so) and for a v-collective's side (from `shift` elements on, with layouts). */
static int count_arg(const Job *j, int ignored, int count) {
  return ignored && j->c.ignored ? -1 : count;
}
static MPI_Datatype type_arg(const Job *j, int ignored, const Buffer *b) {
  return ignored && j->c.ignored ? MPI_DATATYPE_NULL : b->dtype;
}
static const int *array_arg(const Job *j, int ignored, const int *array) {
  return ignored && j->c.ignored ? NULL : array;
}
static void *buffer_arg(const Job *j, int ignored, const Buffer *b, int k) {
  return ignored && j->c.ignored ? NULL : arg(b, k);
}
static void *v_arg(const Buffer *b, int k, size_t shift) {
  return (char *)arg(b, k) + shift * b->spread * b->type->size;
}

/* ------------------------------------------------------------ reductions */

/* allreduce, scan, exscan: count elements in, count out; in place, the input is recvbuf. */
static void setup_elementwise(Job *j) {
  const Case *c = &j->c;
  j->send = buffer_new(j, kSend, c->count);
  j->recv = buffer_new(j, kRecv, c->count);
  fill_values(c->in_place ? &j->recv : &j->send, c->count, kOps[c->op]);
  /* Exscan leaves rank 0's result undefined: never compared. */
  if (strcmp(c->coll, "exscan") == 0 && rank == 0) j->undefined = c->count;
}

static void call_allreduce(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Allreduce, MPI_Iallreduce, send_arg(j, k, c->in_place), arg(&j->recv, k),
                  (int)c->count, j->recv.dtype, kOps[c->op]);
}

static void expect_allreduce(const Job *j, double *want) {
  for (size_t i = 0; i < j->c.count; ++i) want[i] = reduced(kOps[j->c.op], j->c.type, 0, size, i);
}

static void call_scan(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Scan, MPI_Iscan, send_arg(j, k, c->in_place), arg(&j->recv, k), (int)c->count,
                  j->recv.dtype, kOps[c->op]);
}

static void expect_scan(const Job *j, double *want) {
  for (size_t i = 0; i < j->c.count; ++i)
    want[i] = reduced(kOps[j->c.op], j->c.type, 0, rank + 1, i);
}

static void call_exscan(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Exscan, MPI_Iexscan, send_arg(j, k, c->in_place), arg(&j->recv, k),
                  (int)c->count, j->recv.dtype, kOps[c->op]);
}

static void expect_exscan(const Job *j, double *want) {
  for (size_t i = 0; rank > 0 && i < j->c.count; ++i)
    want[i] = reduced(kOps[j->c.op], j->c.type, 0, rank, i);
}

/* In place only at the root (MPI_IN_PLACE is the root's alone); the receive buffer of the
 * others, which MPI does not use, is passed filled and must come back as it was. */
static void setup_reduce(Job *j) {
  const Case *c = &j->c;
  j->send = buffer_new(j, kSend, c->count);
  j->recv = buffer_new(j, kRecv, c->count);
  fill_values(c->in_place && rank == c->root ? &j->recv : &j->send, c->count, kOps[c->op]);
}

static void call_reduce(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Reduce, MPI_Ireduce, send_arg(j, k, c->in_place && rank == c->root),
                  buffer_arg(j, rank != c->root, &j->recv, k), (int)c->count, j->recv.dtype,
                  kOps[c->op], c->root);
}

static void expect_reduce(const Job *j, double *want) {
  if (rank == j->c.root) expect_allreduce(j, want);
}

/* MPI's in place: the input is the whole receive buffer, the result goes to its first count
 * elements and the rest stays as it was. */
static void setup_reduce_scatter_block(Job *j) {
  const Case *c = &j->c;
  size_t total = c->count * size;
  j->send = buffer_new(j, kSend, total);
  j->recv = buffer_new(j, kRecv, c->in_place ? total : c->count);
  fill_values(c->in_place ? &j->recv : &j->send, total, kOps[c->op]);
}

static void call_reduce_scatter_block(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, send_arg(j, k, c->in_place),
                  arg(&j->recv, k), (int)c->count, j->recv.dtype, kOps[c->op]);
}

static void expect_reduce_scatter_block(const Job *j, double *want) {
  for (size_t i = 0; i < j->c.count; ++i)
    want[i] = reduced(kOps[j->c.op], j->c.type, 0, size, rank * j->c.count + i);
}

/* Rank r gets rcounts[r] elements, some none; in place as reduce_scatter_block. */
static void setup_reduce_scatter(Job *j) {
  const Case *c = &j->c;
  for (int r = 0; r < size; ++r) j->rcounts[r] = vcount(c->count, r);
  size_t total = (size_t)sum_below(j->rcounts, size);
  j->send = buffer_new(j, kSend, total);
  j->recv = buffer_new(j, kRecv, c->in_place ? total : (size_t)j->rcounts[rank]);
  fill_values(c->in_place ? &j->recv : &j->send, total, kOps[c->op]);
}

static void call_reduce_scatter(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Reduce_scatter, MPI_Ireduce_scatter, send_arg(j, k, c->in_place),
                  arg(&j->recv, k), j->rcounts, j->recv.dtype, kOps[c->op]);
}

static void expect_reduce_scatter(const Job *j, double *want) {
  size_t first = (size_t)sum_below(j->rcounts, rank);
  for (size_t i = 0; i < (size_t)j->rcounts[rank]; ++i)
    want[i] = reduced(kOps[j->c.op], j->c.type, 0, size, first + i);
}

/* ------------------------------------------------------------ data movement */

static void setup_bcast(Job *j) {
  const Case *c = &j->c;
  j->send = no_buffer();
  j->recv = buffer_new(j, kBcast, c->count);
  for (size_t i = 0; rank == c->root && i < c->count; ++i)
    put(&j->recv, i, (double)(i * 3 + c->root));
}

static void call_bcast(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  BLOCKING_OR_NOT(MPI_Bcast, MPI_Ibcast, arg(&j->recv, k), (int)c->count, j->recv.dtype, c->root);
}

static void expect_bcast(const Job *j, double *want) {
  for (size_t i = 0; i < j->c.count; ++i) want[i] = (double)(i * 3 + j->c.root);
}

/* Elements per count: 3 for the contiguous derived type int3. */
static size_t unit(const Case *c) { return c->derived != MPI_DATATYPE_NULL ? 3 : 1; }

/* In place, this rank's block is already in its slot of the receive buffer. */
static void setup_allgather(Job *j) {
  const Case *c = &j->c;
  size_t elems = unit(c) * c->count;
  j->send = buffer_new(j, kSend, elems);
  j->recv = buffer_new(j, kRecv, elems * size);
  for (size_t i = 0; i < elems; ++i)
    put(c->in_place ? &j->recv : &j->send, (c->in_place ? rank * elems : 0) + i, payload(rank, i));
}

static void call_allgather(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place;
  BLOCKING_OR_NOT(MPI_Allgather, MPI_Iallgather, send_arg(j, k, ip),
                  count_arg(j, ip, (int)c->count), type_arg(j, ip, &j->send), arg(&j->recv, k),
                  (int)c->count, j->recv.dtype);
}

static void expect_allgather(const Job *j, double *want) {
  size_t elems = unit(&j->c) * j->c.count;
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < elems; ++i) want[r * elems + i] = payload(r, i);
}

/* Block q of rank r's input lands in block r of rank q. */
static void setup_alltoall(Job *j) {
  const Case *c = &j->c;
  j->send = buffer_new(j, kSend, c->count * size);
  j->recv = buffer_new(j, kRecv, c->count * size);
  for (int to = 0; to < size; ++to)
    for (size_t i = 0; i < c->count; ++i)
      put(c->in_place ? &j->recv : &j->send, to * c->count + i, pair_payload(rank, to, i));
}

static void call_alltoall(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place;
  BLOCKING_OR_NOT(MPI_Alltoall, MPI_Ialltoall, send_arg(j, k, ip), count_arg(j, ip, (int)c->count),
                  type_arg(j, ip, &j->send), arg(&j->recv, k), (int)c->count, j->recv.dtype);
}

static void expect_alltoall(const Job *j, double *want) {
  for (int from = 0; from < size; ++from)
    for (size_t i = 0; i < j->c.count; ++i)
      want[from * j->c.count + i] = pair_payload(from, rank, i);
}

/* Every rank passes a receive buffer; only the root's is used.  In place, the root's block is
 * already in its slot. */
static void setup_gather(Job *j) {
  const Case *c = &j->c;
  j->send = buffer_new(j, kSend, c->count);
  j->recv = buffer_new(j, kRecv, c->count * size);
  int in_place = c->in_place && rank == c->root;
  for (size_t i = 0; i < c->count; ++i)
    put(in_place ? &j->recv : &j->send, (in_place ? rank * c->count : 0) + i, payload(rank, i));
}

static void call_gather(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place && rank == c->root, off_root = rank != c->root;
  BLOCKING_OR_NOT(MPI_Gather, MPI_Igather, send_arg(j, k, ip), count_arg(j, ip, (int)c->count),
                  type_arg(j, ip, &j->send), buffer_arg(j, off_root, &j->recv, k),
                  count_arg(j, off_root, (int)c->count), type_arg(j, off_root, &j->recv), c->root);
}

static void expect_gather(const Job *j, double *want) {
  for (int r = 0; rank == j->c.root && r < size; ++r)
    for (size_t i = 0; i < j->c.count; ++i) want[r * j->c.count + i] = payload(r, i);
}

/* Every rank passes a send buffer; only the root's is used.  In place, the root keeps its block
 * where it is in the send buffer, and its receive buffer stays as it was. */
static void setup_scatter(Job *j) {
  const Case *c = &j->c;
  j->send = buffer_new(j, kSend, c->count * size);
  j->recv = buffer_new(j, kRecv, c->count);
  for (int r = 0; rank == c->root && r < size; ++r)
    for (size_t i = 0; i < c->count; ++i) put(&j->send, r * c->count + i, payload(r, i));
}

static void call_scatter(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place && rank == c->root, off_root = rank != c->root;
  void *recv = ip ? MPI_IN_PLACE : arg(&j->recv, k);
  BLOCKING_OR_NOT(MPI_Scatter, MPI_Iscatter, buffer_arg(j, off_root, &j->send, k),
                  count_arg(j, off_root, (int)c->count), type_arg(j, off_root, &j->send), recv,
                  count_arg(j, ip, (int)c->count), type_arg(j, ip, &j->recv), c->root);
}

static void expect_scatter(const Job *j, double *want) {
  if (j->c.in_place && rank == j->c.root) return;
  for (size_t i = 0; i < j->c.count; ++i) want[i] = payload(rank, i);
}

/* As gather, with each rank's block at rdispls[r], out of rank order and with gaps. */
static void setup_gatherv(Job *j) {
  const Case *c = &j->c;
  for (int r = 0; r < size; ++r) j->rcounts[r] = vcount(c->count, r);
  j->send = buffer_new(j, kSend, (size_t)j->rcounts[rank]);
  j->recv = buffer_new(j, kRecv, layout(j->rcounts, j->rdispls));
  int in_place = c->in_place && rank == c->root;
  for (size_t i = 0; i < (size_t)j->rcounts[rank]; ++i)
    put(in_place ? &j->recv : &j->send, (in_place ? (size_t)j->rdispls[rank] : 0) + i,
        payload(rank, i));
}

static void call_gatherv(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place && rank == c->root, off_root = rank != c->root;
  void *recv = off_root && c->ignored ? NULL : v_arg(&j->recv, k, j->rshift);
  BLOCKING_OR_NOT(MPI_Gatherv, MPI_Igatherv, send_arg(j, k, ip), count_arg(j, ip, j->rcounts[rank]),
                  type_arg(j, ip, &j->send), recv, array_arg(j, off_root, j->rcounts),
                  array_arg(j, off_root, j->rdispls_arg), type_arg(j, off_root, &j->recv), c->root);
}

static void expect_v_blocks(const Job *j, double *want) {
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < (size_t)j->rcounts[r]; ++i) want[j->rdispls[r] + i] = payload(r, i);
}

static void expect_gatherv(const Job *j, double *want) {
  if (rank == j->c.root) expect_v_blocks(j, want);
}

/* As scatter, with rank r's block at sdispls[r], out of rank order and with gaps. */
static void setup_scatterv(Job *j) {
  const Case *c = &j->c;
  for (int r = 0; r < size; ++r) j->scounts[r] = vcount(c->count, r);
  j->send = buffer_new(j, kSend, layout(j->scounts, j->sdispls));
  j->recv = buffer_new(j, kRecv, (size_t)j->scounts[rank]);
  for (int r = 0; rank == c->root && r < size; ++r)
    for (size_t i = 0; i < (size_t)j->scounts[r]; ++i)
      put(&j->send, j->sdispls[r] + i, payload(r, i));
}

static void call_scatterv(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place && rank == c->root, off_root = rank != c->root;
  const void *send = off_root && c->ignored ? NULL : v_arg(&j->send, k, j->sshift);
  void *recv = ip ? MPI_IN_PLACE : arg(&j->recv, k);
  BLOCKING_OR_NOT(MPI_Scatterv, MPI_Iscatterv, send, array_arg(j, off_root, j->scounts),
                  array_arg(j, off_root, j->sdispls_arg), type_arg(j, off_root, &j->send), recv,
                  count_arg(j, ip, j->scounts[rank]), type_arg(j, ip, &j->recv), c->root);
}

static void expect_scatterv(const Job *j, double *want) {
  if (j->c.in_place && rank == j->c.root) return;
  for (size_t i = 0; i < (size_t)j->scounts[rank]; ++i) want[i] = payload(rank, i);
}

static void setup_allgatherv(Job *j) {
  const Case *c = &j->c;
  for (int r = 0; r < size; ++r) j->rcounts[r] = vcount(c->count, r);
  j->send = buffer_new(j, kSend, (size_t)j->rcounts[rank]);
  j->recv = buffer_new(j, kRecv, layout(j->rcounts, j->rdispls));
  for (size_t i = 0; i < (size_t)j->rcounts[rank]; ++i)
    put(c->in_place ? &j->recv : &j->send, (c->in_place ? (size_t)j->rdispls[rank] : 0) + i,
        payload(rank, i));
}

static void call_allgatherv(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place;
  BLOCKING_OR_NOT(MPI_Allgatherv, MPI_Iallgatherv, send_arg(j, k, ip),
                  count_arg(j, ip, j->rcounts[rank]), type_arg(j, ip, &j->send),
                  v_arg(&j->recv, k, j->rshift), j->rcounts, j->rdispls_arg, j->recv.dtype);
}

/* Each pair's count differs (and is the same both ways in place, where the receive buffer is
 * also the input); blocks out of rank order with gaps on both sides. */
static void setup_alltoallv(Job *j) {
  const Case *c = &j->c;
  for (int peer = 0; peer < size; ++peer) {
    j->scounts[peer] = pair_count(c->count, rank, peer, c->in_place);
    j->rcounts[peer] = pair_count(c->count, peer, rank, c->in_place);
  }
  j->send = buffer_new(j, kSend, layout(j->scounts, j->sdispls));
  j->recv = buffer_new(j, kRecv, layout(j->rcounts, j->rdispls));
  const int *counts = c->in_place ? j->rcounts : j->scounts;
  const int *displs = c->in_place ? j->rdispls : j->sdispls;
  for (int to = 0; to < size; ++to)
    for (size_t i = 0; i < (size_t)counts[to]; ++i)
      put(c->in_place ? &j->recv : &j->send, displs[to] + i, pair_payload(rank, to, i));
}

static void call_alltoallv(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  const Case *c = &j->c;
  const int ip = c->in_place;
  const void *send = ip ? MPI_IN_PLACE : v_arg(&j->send, k, j->sshift);
  BLOCKING_OR_NOT(MPI_Alltoallv, MPI_Ialltoallv, send, array_arg(j, ip, j->scounts),
                  array_arg(j, ip, j->sdispls_arg), type_arg(j, ip, &j->send),
                  v_arg(&j->recv, k, j->rshift), j->rcounts, j->rdispls_arg, j->recv.dtype);
}

static void expect_alltoallv(const Job *j, double *want) {
  for (int from = 0; from < size; ++from)
    for (size_t i = 0; i < (size_t)j->rcounts[from]; ++i)
      want[j->rdispls[from] + i] = pair_payload(from, rank, i);
}

static void setup_barrier(Job *j) {
  j->send = no_buffer();
  j->recv = no_buffer();
}

static void call_barrier(const Job *j, int k, MPI_Comm comm, MPI_Request *req) {
  (void)j;
  (void)k;
  (void)(req != NULL ? MPI_Ibarrier(comm, req) : MPI_Barrier(comm));
}

static void expect_nothing(const Job *j, double *want) {
  (void)j;
  (void)want;
}

/* ------------------------------------------------------------ the collectives, swept */

static const Coll kCollAllreduce = {"allreduce", setup_elementwise, call_allreduce,
                                    expect_allreduce};
static const Coll kCollReduce = {"reduce", setup_reduce, call_reduce, expect_reduce};
static const Coll kCollReduceScatterBlock = {"reduce_scatter_block", setup_reduce_scatter_block,
                                             call_reduce_scatter_block,
                                             expect_reduce_scatter_block};
static const Coll kCollReduceScatter = {"reduce_scatter", setup_reduce_scatter, call_reduce_scatter,
                                        expect_reduce_scatter};
static const Coll kCollScan = {"scan", setup_elementwise, call_scan, expect_scan};
static const Coll kCollExscan = {"exscan", setup_elementwise, call_exscan, expect_exscan};
static const Coll kCollBcast = {"bcast", setup_bcast, call_bcast, expect_bcast};
static const Coll kCollAllgather = {"allgather", setup_allgather, call_allgather, expect_allgather};
static const Coll kCollAlltoall = {"alltoall", setup_alltoall, call_alltoall, expect_alltoall};
static const Coll kCollGather = {"gather", setup_gather, call_gather, expect_gather};
static const Coll kCollScatter = {"scatter", setup_scatter, call_scatter, expect_scatter};
static const Coll kCollGatherv = {"gatherv", setup_gatherv, call_gatherv, expect_gatherv};
static const Coll kCollScatterv = {"scatterv", setup_scatterv, call_scatterv, expect_scatterv};
static const Coll kCollAllgatherv = {"allgatherv", setup_allgatherv, call_allgatherv,
                                     expect_v_blocks};
static const Coll kCollAlltoallv = {"alltoallv", setup_alltoallv, call_alltoallv, expect_alltoallv};
static const Coll kCollBarrier = {"barrier", setup_barrier, call_barrier, expect_nothing};

/* What a collective takes: an op (reductions), a root, MPI_IN_PLACE. */
typedef struct {
  const Coll *coll;
  int reduces, rooted, in_place;
} Shape;

/* Every collective with buffers, in both forms. */
static const Shape kShapes[] = {
    {&kCollAllreduce, 1, 0, 1},
    {&kCollReduce, 1, 1, 1},
    {&kCollReduceScatterBlock, 1, 0, 1},
    {&kCollReduceScatter, 1, 0, 1},
    {&kCollScan, 1, 0, 1},
    {&kCollExscan, 1, 0, 1},
    {&kCollBcast, 0, 1, 0},
    {&kCollAllgather, 0, 0, 1},
    {&kCollAlltoall, 0, 0, 1},
    {&kCollGather, 0, 1, 1},
    {&kCollScatter, 0, 1, 1},
    {&kCollGatherv, 0, 1, 1},
    {&kCollScatterv, 0, 1, 1},
    {&kCollAllgatherv, 0, 0, 1},
    {&kCollAlltoallv, 0, 0, 1},
};

/* The blocking form of s over types, all four ops where it reduces, every count, roots 0 and
 * size - 1 (every root for bcast) where it has one, in place and not where MPI allows it. */
static void sweep(const Shape *s, const Type *const *types, size_t num_types) {
  int all_roots = s->coll == &kCollBcast;
  for (size_t t = 0; t < num_types; ++t)
    for (int o = 0; o < (s->reduces ? (int)NUM(kOps) : 1); ++o)
      for (size_t n = 0; n < num_counts; ++n)
        for (int k = 0; k < (s->rooted ? (all_roots ? size : 2) : 1); ++k)
          for (int in_place = 0; in_place < (s->in_place ? 2 : 1); ++in_place) {
            const Case c = {.type = types[t],
                            .derived = MPI_DATATYPE_NULL,
                            .op = s->reduces ? o : -1,
                            .count = kCounts[n],
                            .root = !s->rooted  ? -1
                                    : all_roots ? k
                                    : k == 0    ? 0
                                                : size - 1,
                            .in_place = in_place,
                            .form = kBlocking};
            run_case(s->coll, c);
          }
}

static const Type *const kAllTypes[] = {&kTypes[0], &kTypes[1], &kTypes[2],
                                        &kTypes[3], &kTypes[4], &kTypes[5]};
/* The reductions new to the component: fewer types keep the run short. */
static const Type *const kSomeTypes[] = {&kTypes[0], &kTypes[3], &kTypes[5]};
static const Type *const kMovedTypes[] = {&kTypes[0], &kTypes[4]};

static void test_blocking(void) {
  for (size_t s = 0; s < NUM(kShapes); ++s) {
    const Coll *coll = kShapes[s].coll;
    if (coll == &kCollAllgather) continue; /* below, with a derived type */
    int old = coll == &kCollAllreduce || coll == &kCollReduce || coll == &kCollReduceScatterBlock;
    if (kShapes[s].reduces)
      sweep(&kShapes[s], old ? kAllTypes : kSomeTypes, old ? NUM(kAllTypes) : NUM(kSomeTypes));
    else
      sweep(&kShapes[s], kMovedTypes, NUM(kMovedTypes));
  }
  MPI_Datatype triple; /* a contiguous derived type: moves as bytes on Cohort */
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  for (size_t n = 0; n < num_counts; ++n)
    for (int in_place = 0; in_place < 2; ++in_place)
      for (int derived = 0; derived < 2; ++derived) {
        const Case c = {.type = kInt,
                        .derived = derived ? triple : MPI_DATATYPE_NULL,
                        .op = -1,
                        .count = kCounts[n],
                        .root = -1,
                        .in_place = in_place,
                        .form = kBlocking};
        run_case(&kCollAllgather, c);
      }
  MPI_Type_free(&triple);
}

/* Case n of shape s in a nonblocking form: the count kCounts[n], and with n a type, an op, a
 * root and in place or not, so that the five cases of each collective vary them all. */
static Case nonblocking_case(const Shape *s, size_t n, enum Form form) {
  const Case c = {.type = s->reduces ? &kTypes[n % NUM(kTypes)]
                          : n % 2    ? kDouble
                                     : kInt,
                  .derived = MPI_DATATYPE_NULL,
                  .op = s->reduces ? (int)(n % NUM(kOps)) : -1,
                  .count = kCounts[n],
                  .root = !s->rooted ? -1
                          : n % 2    ? size - 1
                                     : 0,
                  .in_place = s->in_place && n % 2 == 1,
                  .form = form};
  return c;
}

/* Several different nonblocking collectives (every one, ibarrier too) posted back to back, a
 * blocking one between posting and waiting, then completed by MPI_Waitall or by MPI_Wait in
 * the reverse order of posting: MPI lets them complete in any order of waiting. */
static void run_group(size_t n, enum Form form) {
  enum { kJobs = NUM(kShapes) + 1 };
  Job *jobs[kJobs];
  for (size_t s = 0; s < NUM(kShapes); ++s)
    jobs[s] = job_new(kShapes[s].coll, nonblocking_case(&kShapes[s], n, form));
  const Case none = {
      .type = kInt, .derived = MPI_DATATYPE_NULL, .op = -1, .count = 0, .root = -1, .form = form};
  jobs[kJobs - 1] = job_new(&kCollBarrier, none);
  int between_right = 1;
  for (int k = 0; k < 2; ++k) {
    MPI_Request reqs[kJobs];
    for (int g = 0; g < kJobs; ++g) jobs[g]->coll->call(jobs[g], k, comm_of(k), &reqs[g]);
    int mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm_of(k));
    between_right &= sum == size * (size + 1) / 2;
    if (form == kWaitall) MPI_Waitall(kJobs, reqs, MPI_STATUSES_IGNORE);
    for (int g = kJobs - 1; form == kWaitReverse && g >= 0; --g)
      MPI_Wait(&reqs[g], MPI_STATUS_IGNORE);
  }
  char name[64];
  snprintf(name, sizeof name, "group-%zu%s-allreduce-between", kCounts[n], kFormNames[form]);
  if (!between_right) printf("FAIL %s: rank %d: wrong sum\n", name, rank);
  check(name, between_right, &between_right, 0);
  for (int g = 0; g < kJobs; ++g) job_finish(jobs[g]);
}

static void test_nonblocking(void) {
  for (size_t s = 0; s < NUM(kShapes); ++s)
    for (size_t n = 0; n < num_counts; ++n)
      run_case(kShapes[s].coll, nonblocking_case(&kShapes[s], n, kWait));
  for (size_t n = 0; n < num_counts; ++n) run_group(n, n % 2 ? kWaitReverse : kWaitall);
  /* Polled with MPI_Test: the largest count, so that it takes many polls. */
  const size_t last = num_counts - 1;
  run_case(&kCollAllreduce, nonblocking_case(&kShapes[0], last, kTest));
  run_case(&kCollAlltoallv, nonblocking_case(&kShapes[NUM(kShapes) - 1], last, kTest));
}

/* ------------------------------------------------------------ what differs between ranks */

/* The counts of the cases below: the first nonzero one and the last one, and 0 for the
 * layouts (a side that moves nothing with a type that has gaps). */
static size_t some_count(int which) {
  size_t first = 0;
  for (size_t n = 0; n < num_counts && first == 0; ++n) first = kCounts[n];
  return which == 0 ? first : kCounts[num_counts - 1];
}

/* Every collective with what MPI lets a rank leave out passed as junk (MPI_DATATYPE_NULL, a
 * count of -1, NULL buffers and arrays), blocking and nonblocking: in place, and for the rooted
 * ones off the root.  The standard says these arguments are not read; a rank that reads them
 * gets MPI_ERR_TYPE from MPI, which aborts the job. */
static void test_ignored_arguments(void) {
  for (size_t s = 0; s < NUM(kShapes); ++s) {
    const Shape *shape = &kShapes[s];
    for (int which = 0; which < 2; ++which)
      for (int k = 0; k < (shape->rooted ? 2 : 1); ++k)
        for (int in_place = 0; in_place < (shape->in_place ? 2 : 1); ++in_place) {
          if (!in_place && !shape->rooted) continue; /* nothing is ignored */
          for (int form = 0; form < 2; ++form) {
            const Case c = {.type = shape->reduces ? &kTypes[3] : kInt,
                            .derived = MPI_DATATYPE_NULL,
                            .op = shape->reduces ? 0 : -1,
                            .count = some_count(which),
                            .root = !shape->rooted ? -1
                                    : k == 0       ? 0
                                                   : size - 1,
                            .in_place = in_place,
                            .form = form == 0 ? kBlocking : kWait,
                            .ignored = 1};
            run_case(shape->coll, c);
          }
        }
  }
}

/* Every collective that moves data, with types that differ between ranks but have one type
 * signature (a type with gaps on some ranks, a plain one on the others), and the
 * v-collectives' blocks passed with negative displacements on some ranks: blocking and
 * nonblocking, in place and not, roots 0 and size - 1, counts 0 and two more.  A rank that
 * leaves the others' route for such a difference hangs them all.  (A reduction's type cannot
 * differ: MPI's predefined ops take predefined types only, the same on every rank, and Open
 * MPI refuses a derived one before any module sees the call.) */
static void test_layouts(void) {
  const size_t counts[] = {0, some_count(0), some_count(1)};
  for (size_t s = 0; s < NUM(kShapes); ++s) {
    const Shape *shape = &kShapes[s];
    if (shape->reduces) continue;
    for (size_t n = 0; n < NUM(counts); ++n)
      for (int k = 0; k < (shape->rooted ? 2 : 1); ++k)
        for (int in_place = 0; in_place < (shape->in_place ? 2 : 1); ++in_place)
          for (int form = 0; form < 2; ++form) {
            const Case c = {.type = n % 2 ? kDouble : kInt,
                            .derived = MPI_DATATYPE_NULL,
                            .op = -1,
                            .count = counts[n],
                            .root = !shape->rooted ? -1
                                    : k == 0       ? 0
                                                   : size - 1,
                            .in_place = in_place,
                            .form = form == 0 ? kBlocking : kWait,
                            .layouts = 1};
            run_case(shape->coll, c);
          }
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

/* Rank r arrives r * 20 ms late; nobody may leave (MPI_Barrier, or MPI_Wait on MPI_Ibarrier)
 * before the last one arrived. */
static void test_barrier(int nonblocking) {
  int ok = 1;
  for (int k = 0; k < 3; ++k) {
    double wait_until = now() + rank * 0.02;
    while (now() < wait_until) {
    }
    double times[2] = {now(), 0};
    if (nonblocking) {
      MPI_Request req;
      MPI_Ibarrier(MPI_COMM_WORLD, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
    }
    times[1] = now();
    double *all = malloc(2 * sizeof(double) * size);
    MPI_Allgather(times, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, ompi);
    double last_arrival = 0;
    for (int r = 0; r < size; ++r)
      last_arrival = all[2 * r] > last_arrival ? all[2 * r] : last_arrival;
    ok &= times[1] >= last_arrival;
    free(all);
  }
  const char *name = nonblocking ? "ibarrier-3" : "barrier-3";
  if (!ok) printf("FAIL %s: rank %d left before the last rank arrived\n", name, rank);
  check(name, ok, &ok, 0);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

/* Cases Cohort does not take: they must come back right from Open MPI's modules (on device
 * memory, through host copies of it). */
static void test_fallbacks(void) {
  struct {
    double value;
    int rank;
  } pair = {(double)((rank * 5) % size), rank}, best;
  void *in = devmem_up(&pair, sizeof pair), *out = devmem_up(&best, sizeof best);
  MPI_Allreduce(in, out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  devmem_down(&pair, in, sizeof pair);
  devmem_down(&best, out, sizeof best);
  double max = 0;
  int at = 0;
  for (int r = 0; r < size; ++r)
    if ((double)((r * 5) % size) > max) max = (double)((r * 5) % size), at = r;
  double result[2] = {best.value, best.rank}; /* not the struct: its padding is never written */
  check("fallback-allreduce-maxloc", best.value == max && best.rank == at, result, sizeof result);

  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  int mine = rank + 1, sum = 0;
  in = devmem_up(&mine, sizeof mine), out = devmem_up(&sum, sizeof sum);
  MPI_Allreduce(in, out, 1, MPI_INT, op, MPI_COMM_WORLD);
  devmem_down(&mine, in, sizeof mine);
  devmem_down(&sum, out, sizeof sum);
  check("fallback-allreduce-userop", sum == size * (size + 1) / 2, &sum, sizeof sum);
  MPI_Op_free(&op);

  short s = (short)(rank + 1), ssum = 0;
  in = devmem_up(&s, sizeof s), out = devmem_up(&ssum, sizeof ssum);
  MPI_Allreduce(in, out, 1, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
  devmem_down(&s, in, sizeof s);
  devmem_down(&ssum, out, sizeof ssum);
  check("fallback-allreduce-short", ssum == size * (size + 1) / 2, &ssum, sizeof ssum);

  MPI_Datatype strided; /* every other int of 8 */
  MPI_Type_vector(4, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = rank == 0 ? i : -1;
  void *world = devmem_up(buf, sizeof buf);
  MPI_Bcast(world, 1, strided, 0, MPI_COMM_WORLD);
  devmem_down(buf, world, sizeof buf);
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
  void *in = devmem_up(&one, sizeof one), *out = devmem_up(&count, sizeof count);
  MPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, half);
  devmem_down(&one, in, sizeof one);
  devmem_down(&count, out, sizeof count);
  check("split-allreduce", count == half_size, &count, sizeof count);
  MPI_Comm_free(&half);
}

/* Ranks that change the kind of memory they pass between calls of one collective and size:
 * the component agrees on the route only now and then, so a rank whose buffers are not where
 * the remembered route runs must stage them there (host memory onto the GPU, device memory
 * through host memory).  Phases of a loop of allreduces on 3000 ints (a size no other case
 * uses): all on the device, rank 0 on the host, all on the device, all on the host, all on the
 * device.  Each call's result is checked; one digest line per phase. */
static int host_in_switch(int i) {
  return (i >= 150 && i < 160 && rank == 0) || (i >= 180 && i < 220);
}

static void test_memory_switch(void) {
  enum { kCount = 3000, kCalls = 260 };
  static const int kPhaseEnds[] = {150, 160, 180, 220, kCalls};
  static int in[kCount], out[kCount];
  uint64_t h = kDigestStart;
  int ok = 1, phase = 0;
  for (int i = 0; i < kCalls; ++i) {
    for (int e = 0; e < kCount; ++e) in[e] = (rank + 1) * (e % 97 + i), out[e] = -1;
    const int saved = devmem_on_device;
    devmem_on_device = saved && !host_in_switch(i);
    void *send = devmem_up(in, sizeof in), *recv = devmem_up(out, sizeof out);
    MPI_Allreduce(send, recv, kCount, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    devmem_down(in, send, sizeof in);
    devmem_down(out, recv, sizeof out);
    devmem_on_device = saved;
    const int ranks_sum = size * (size + 1) / 2;
    for (int e = 0; e < kCount; ++e) ok &= out[e] == ranks_sum * (e % 97 + i);
    h = digest(h, out, sizeof out);
    if (i + 1 == kPhaseEnds[phase]) {
      char name[48];
      snprintf(name, sizeof name, "memory-switch-phase%d", phase++);
      printf("%d %s %016llx%s\n", rank, name, (unsigned long long)h, ok ? "" : " WRONG");
      ++cases;
      if (!ok) ++wrong;
      h = kDigestStart;
      ok = 1;
    }
  }
}

/* The first collective is the component's (a rank late to it is what LATE_RANK tests); Open
 * MPI's communicator is made after it. */
static void open_communicators(void) {
  int one = 1, ranks = 0;
  void *in = devmem_up(&one, sizeof one), *out = devmem_up(&ranks, sizeof ranks);
  MPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  devmem_down(&one, in, sizeof one);
  devmem_down(&ranks, out, sizeof ranks);
  check("first-allreduce", ranks == size, &ranks, sizeof ranks);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "coll_cohort_enable", "false");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ompi);
  MPI_Info_free(&info);
  MPI_Comm_set_name(ompi, "test-ompi");
}

/* COLL_TEST_PARTS (a comma-separated list of blocking, nonblocking, ignored, layouts, barrier,
 * fallbacks, split, switch) runs those parts only; all by default. */
static int part_chosen(const char *part) {
  const char *list = getenv("COLL_TEST_PARTS");
  if (list == NULL || *list == '\0') return 1;
  const size_t n = strlen(part);
  for (const char *p = list; (p = strstr(p, part)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
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
  devmem_init(rank);
  choose_counts();
  open_communicators();
  make_layout_types();
  if (part_chosen("blocking")) test_blocking();
  if (part_chosen("nonblocking")) test_nonblocking();
  if (part_chosen("ignored")) test_ignored_arguments();
  if (part_chosen("layouts")) test_layouts();
  if (part_chosen("barrier")) test_barrier(0), test_barrier(1);
  if (part_chosen("fallbacks")) test_fallbacks();
  if (part_chosen("split")) test_split();
  if (part_chosen("switch")) test_memory_switch();
  free_layout_types();
  /* Every rank decides alike, on Open MPI's communicator, whatever went wrong where. */
  int mine[2] = {wrong, cases}, total[2] = {0, 0};
  MPI_Allreduce(mine, total, 2, MPI_INT, MPI_SUM, ompi);
  if (rank == 0) printf("summary: %d wrong on %d ranks, %d cases\n", total[0], size, total[1]);
  MPI_Comm_free(&ompi);
  MPI_Finalize();
  return total[0] == 0 ? 0 : 1;
}
