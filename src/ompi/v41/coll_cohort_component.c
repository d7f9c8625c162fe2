/* Open MPI 4.1 glue (coll framework 2.0.0, module 2.3.0): the component, its MCA parameters,
 * its output stream, the module and the fallback to the module below us.  Everything else is
 * in the C++ logic behind coll_cohort.h.  Built against the installed Open MPI's development
 * headers, with hidden visibility: the component structure is the one symbol it exports. */
#include "ompi_config.h"

#include <pthread.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#include "coll_cohort.h"

#if OMPI_MAJOR_VERSION != 4 || OMPI_MINOR_VERSION < 1
#error "this glue is for Open MPI 4.1 (coll API 2.0.0)"
#endif

/* The collectives we offer, blocking and nonblocking, each with the function and module we
 * fall back to: X(name, kind). */
#define COHORT_FOR_EACH_COLL(X)                             \
  X(allreduce, COLL_COHORT_ALLREDUCE)                       \
  X(bcast, COLL_COHORT_BCAST)                               \
  X(reduce, COLL_COHORT_REDUCE)                             \
  X(allgather, COLL_COHORT_ALLGATHER)                       \
  X(allgatherv, COLL_COHORT_ALLGATHERV)                     \
  X(reduce_scatter_block, COLL_COHORT_REDUCE_SCATTER_BLOCK) \
  X(reduce_scatter, COLL_COHORT_REDUCE_SCATTER)             \
  X(alltoall, COLL_COHORT_ALLTOALL)                         \
  X(alltoallv, COLL_COHORT_ALLTOALLV)                       \
  X(barrier, COLL_COHORT_BARRIER)                           \
  X(gather, COLL_COHORT_GATHER)                             \
  X(gatherv, COLL_COHORT_GATHERV)                           \
  X(scatter, COLL_COHORT_SCATTER)                           \
  X(scatterv, COLL_COHORT_SCATTERV)                         \
  X(scan, COLL_COHORT_SCAN)                                 \
  X(exscan, COLL_COHORT_EXSCAN)

typedef struct mca_coll_cohort_module_t {
  mca_coll_base_module_t super;
  coll_cohort_comm_t *state;
#define COHORT_PREV_FIELDS(name, kind)              \
  mca_coll_base_module_##name##_fn_t prev_##name;   \
  mca_coll_base_module_t *prev_##name##_module;     \
  mca_coll_base_module_i##name##_fn_t prev_i##name; \
  mca_coll_base_module_t *prev_i##name##_module;
  COHORT_FOR_EACH_COLL(COHORT_PREV_FIELDS)
} mca_coll_cohort_module_t;

static void module_construct(mca_coll_cohort_module_t *m) {
  m->state = NULL;
#define COHORT_PREV_CLEAR(name, kind) \
  m->prev_##name = NULL;              \
  m->prev_##name##_module = NULL;     \
  m->prev_i##name = NULL;             \
  m->prev_i##name##_module = NULL;
  COHORT_FOR_EACH_COLL(COHORT_PREV_CLEAR)
}

static void module_destruct(mca_coll_cohort_module_t *m) {
  if (m->state != NULL) coll_cohort_comm_free(m->state);
  m->state = NULL;
#define COHORT_PREV_RELEASE(name, kind)                                      \
  if (m->prev_##name##_module != NULL) OBJ_RELEASE(m->prev_##name##_module); \
  if (m->prev_i##name##_module != NULL) OBJ_RELEASE(m->prev_i##name##_module);
  COHORT_FOR_EACH_COLL(COHORT_PREV_RELEASE)
}

OBJ_CLASS_INSTANCE(mca_coll_cohort_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* ------------------------------------------------------------------ parameters, output */

static coll_cohort_params_t params = COLL_COHORT_PARAMS_DEFAULT; /* the MCA variables' storage */
static int offered = 0; /* bits (1 << kind), from the logic at open */
static int output_stream = -1;

/* The logic's messages: warnings always, the rest up to coll_cohort_verbose (the stream's
 * verbosity); Open MPI's default stream prefixes them with [host:pid] on stderr. */
static void output(int level, const char *text) {
  if (level <= 0) {
    opal_output(output_stream, "%s", text);
  } else {
    opal_output_verbose(level, output_stream, "%s", text);
  }
}

/* ------------------------------------------------------------------ the saved functions */

#define MODULE(module) ((mca_coll_cohort_module_t *)(module))

/* The saved blocking function of a call's kind, on the arguments in `a`. */
static int run_prev(mca_coll_cohort_module_t *m, const coll_cohort_args_t *a,
                    struct ompi_communicator_t *comm) {
  switch (a->kind) {
    case COLL_COHORT_ALLREDUCE:
      return m->prev_allreduce(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm,
                               m->prev_allreduce_module);
    case COLL_COHORT_BCAST:
      return m->prev_bcast(a->rbuf, a->count, a->dtype, a->root, comm, m->prev_bcast_module);
    case COLL_COHORT_REDUCE:
      return m->prev_reduce(a->sbuf, a->rbuf, a->count, a->dtype, a->op, a->root, comm,
                            m->prev_reduce_module);
    case COLL_COHORT_ALLGATHER:
      return m->prev_allgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, comm,
                               m->prev_allgather_module);
    case COLL_COHORT_ALLGATHERV:
      return m->prev_allgatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                                a->rdtype, comm, m->prev_allgatherv_module);
    case COLL_COHORT_REDUCE_SCATTER_BLOCK:
      return m->prev_reduce_scatter_block(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm,
                                          m->prev_reduce_scatter_block_module);
    case COLL_COHORT_REDUCE_SCATTER:
      return m->prev_reduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->dtype, a->op, comm,
                                    m->prev_reduce_scatter_module);
    case COLL_COHORT_ALLTOALL:
      return m->prev_alltoall(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, comm,
                              m->prev_alltoall_module);
    case COLL_COHORT_ALLTOALLV:
      return m->prev_alltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcounts,
                               a->rdispls, a->rdtype, comm, m->prev_alltoallv_module);
    case COLL_COHORT_BARRIER: return m->prev_barrier(comm, m->prev_barrier_module);
    case COLL_COHORT_GATHER:
      return m->prev_gather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root,
                            comm, m->prev_gather_module);
    case COLL_COHORT_GATHERV:
      return m->prev_gatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                             a->rdtype, a->root, comm, m->prev_gatherv_module);
    case COLL_COHORT_SCATTER:
      return m->prev_scatter(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root,
                             comm, m->prev_scatter_module);
    case COLL_COHORT_SCATTERV:
      return m->prev_scatterv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcount,
                              a->rdtype, a->root, comm, m->prev_scatterv_module);
    case COLL_COHORT_SCAN:
      return m->prev_scan(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm, m->prev_scan_module);
    case COLL_COHORT_EXSCAN:
      return m->prev_exscan(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm,
                            m->prev_exscan_module);
    default: return OMPI_ERR_NOT_SUPPORTED;
  }
}

/* The saved nonblocking function of a call's kind. */
static int run_iprev(mca_coll_cohort_module_t *m, const coll_cohort_args_t *a,
                     struct ompi_communicator_t *comm, ompi_request_t **r) {
  switch (a->kind) {
    case COLL_COHORT_ALLREDUCE:
      return m->prev_iallreduce(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm, r,
                                m->prev_iallreduce_module);
    case COLL_COHORT_BCAST:
      return m->prev_ibcast(a->rbuf, a->count, a->dtype, a->root, comm, r, m->prev_ibcast_module);
    case COLL_COHORT_REDUCE:
      return m->prev_ireduce(a->sbuf, a->rbuf, a->count, a->dtype, a->op, a->root, comm, r,
                             m->prev_ireduce_module);
    case COLL_COHORT_ALLGATHER:
      return m->prev_iallgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, comm,
                                r, m->prev_iallgather_module);
    case COLL_COHORT_ALLGATHERV:
      return m->prev_iallgatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                                 a->rdtype, comm, r, m->prev_iallgatherv_module);
    case COLL_COHORT_REDUCE_SCATTER_BLOCK:
      return m->prev_ireduce_scatter_block(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm, r,
                                           m->prev_ireduce_scatter_block_module);
    case COLL_COHORT_REDUCE_SCATTER:
      return m->prev_ireduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->dtype, a->op, comm, r,
                                     m->prev_ireduce_scatter_module);
    case COLL_COHORT_ALLTOALL:
      return m->prev_ialltoall(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, comm,
                               r, m->prev_ialltoall_module);
    case COLL_COHORT_ALLTOALLV:
      return m->prev_ialltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcounts,
                                a->rdispls, a->rdtype, comm, r, m->prev_ialltoallv_module);
    case COLL_COHORT_BARRIER: return m->prev_ibarrier(comm, r, m->prev_ibarrier_module);
    case COLL_COHORT_GATHER:
      return m->prev_igather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root,
                             comm, r, m->prev_igather_module);
    case COLL_COHORT_GATHERV:
      return m->prev_igatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                              a->rdtype, a->root, comm, r, m->prev_igatherv_module);
    case COLL_COHORT_SCATTER:
      return m->prev_iscatter(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root,
                              comm, r, m->prev_iscatter_module);
    case COLL_COHORT_SCATTERV:
      return m->prev_iscatterv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcount,
                               a->rdtype, a->root, comm, r, m->prev_iscatterv_module);
    case COLL_COHORT_SCAN:
      return m->prev_iscan(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm, r,
                           m->prev_iscan_module);
    case COLL_COHORT_EXSCAN:
      return m->prev_iexscan(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm, r,
                             m->prev_iexscan_module);
    default: return OMPI_ERR_NOT_SUPPORTED;
  }
}

/* ------------------------------------------------------------------ nonblocking requests */

/* Open MPI's bindings of the nonblocking collectives take the request of every coll module
 * for an ompi_coll_base_nbc_request_t and, for a call with derived datatypes or a user op,
 * write them into it to release them at completion (ompi_coll_base_retain_datatypes): on a
 * request that is only an ompi_request_t, that write lands on whatever follows it.  Its header,
 * coll_base_util.h, does not compile with Debian's Open MPI headers (it needs a Fortran header
 * they lack), so its 4.1 layout is restated here, and the class, which libmpi exports, is
 * its parent's. */
typedef struct {
  ompi_request_t super;
  void *completion_callback;      /* cb.req_complete_cb (or cb.req_free, persistent) */
  void *completion_callback_data; /* req_complete_cb_data */
  void *retained[2];              /* data: the datatypes or op it holds */
} nbc_request_t;
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/* A nonblocking call Cohort took (logic's request) or staged onto Open MPI's module (inner,
 * its request on the host copies), as the MPI request the application waits on.  Active ones
 * are completed from Open MPI's progress loop. */
typedef struct cohort_nb_request_t {
  nbc_request_t super;
  coll_cohort_request_t *logic;
  ompi_request_t *inner;
  struct cohort_nb_request_t *next; /* in the active list */
} cohort_nb_request_t;
OBJ_CLASS_INSTANCE(cohort_nb_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* The active list; the lock is held only to change it and to poll it, never while a request
 * is completed (completion may run callbacks that post collectives).  A thread that finds the
 * list being polled leaves it to that thread. */
static cohort_nb_request_t *active = NULL;
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static bool progress_registered = false;

/* Whether one active request's call finished; sets its status then. */
static bool finished(cohort_nb_request_t *r) {
  int rc = MPI_SUCCESS;
  if (r->inner != NULL) {
    if (!REQUEST_COMPLETE(r->inner)) return false;
    rc = coll_cohort_staged_done(r->logic, r->inner->req_status.MPI_ERROR);
    r->logic = NULL;
    ompi_request_free(&r->inner);
  } else if (!coll_cohort_request_test(r->logic, &rc)) {
    return false;
  }
  r->super.super.req_status.MPI_ERROR = rc;
  return true;
}

static int cohort_progress(void) {
  if (active == NULL || pthread_mutex_trylock(&active_lock) != 0) return 0;
  cohort_nb_request_t *done = NULL;
  for (cohort_nb_request_t **link = &active; *link != NULL;) {
    cohort_nb_request_t *r = *link;
    if (finished(r)) {
      *link = r->next;
      r->next = done;
      done = r;
    } else {
      link = &r->next;
    }
  }
  pthread_mutex_unlock(&active_lock);
  int completed = 0;
  while (done != NULL) {
    cohort_nb_request_t *r = done;
    done = r->next;
    ompi_request_complete(&r->super.super, true);
    ++completed;
  }
  return completed;
}

static int nb_request_free(ompi_request_t **request) {
  cohort_nb_request_t *r = (cohort_nb_request_t *)*request;
  if (r->logic != NULL) coll_cohort_request_free(r->logic);
  OBJ_RELEASE(r->super.super.req_mpi_object.comm);
  OMPI_REQUEST_FINI(&r->super.super);
  OBJ_RELEASE(r);
  *request = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

/* Collectives cannot be cancelled (MPI-3.1 5.12). */
static int nb_request_cancel(ompi_request_t *request, int complete) {
  (void)request;
  (void)complete;
  return OMPI_SUCCESS;
}

static int nb_request_start(struct ompi_communicator_t *comm, coll_cohort_request_t *logic,
                            ompi_request_t *inner, ompi_request_t **request) {
  cohort_nb_request_t *r = OBJ_NEW(cohort_nb_request_t);
  if (r == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  OMPI_REQUEST_INIT(&r->super.super, false);
  r->super.super.req_type = OMPI_REQUEST_COLL;
  r->super.super.req_state = OMPI_REQUEST_ACTIVE;
  r->super.super.req_status = ompi_status_empty;
  r->super.super.req_free = nb_request_free;
  r->super.super.req_cancel = nb_request_cancel;
  r->super.super.req_mpi_object.comm = comm;
  OBJ_RETAIN(comm); /* the communicator (and its module's state) outlives the request */
  r->logic = logic;
  r->inner = inner;
  pthread_mutex_lock(&active_lock);
  r->next = active;
  active = r;
  if (!progress_registered) {
    opal_progress_register(cohort_progress);
    progress_registered = true;
  }
  pthread_mutex_unlock(&active_lock);
  *request = &r->super.super;
  return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ collectives */

/* Every blocking entry: Cohort, Open MPI on staged copies, or the saved function. */
static int run_blocking(mca_coll_base_module_t *module, struct ompi_communicator_t *comm,
                        const coll_cohort_args_t *a) {
  mca_coll_cohort_module_t *m = MODULE(module);
  coll_cohort_request_t *token = NULL;
  coll_cohort_args_t staged;
  int rc = MPI_SUCCESS;
  switch (coll_cohort_call(m->state, a, 0, &token, &staged, &rc)) {
    case COLL_COHORT_RAN: return rc;
    case COLL_COHORT_STAGED: return coll_cohort_staged_done(token, run_prev(m, &staged, comm));
    default: return run_prev(m, a, comm);
  }
}

/* Every nonblocking entry, alike. */
static int run_nonblocking(mca_coll_base_module_t *module, struct ompi_communicator_t *comm,
                           const coll_cohort_args_t *a, ompi_request_t **request) {
  mca_coll_cohort_module_t *m = MODULE(module);
  coll_cohort_request_t *logic = NULL;
  coll_cohort_args_t staged;
  ompi_request_t *inner = NULL;
  int rc = MPI_SUCCESS;
  switch (coll_cohort_call(m->state, a, 1, &logic, &staged, &rc)) {
    case COLL_COHORT_RAN:
      if (logic == NULL) return rc; /* posting failed */
      return nb_request_start(comm, logic, NULL, request);
    case COLL_COHORT_STAGED:
      rc = run_iprev(m, &staged, comm, &inner);
      if (rc != OMPI_SUCCESS) return coll_cohort_staged_done(logic, rc);
      return nb_request_start(comm, logic, inner, request);
    default: return run_iprev(m, a, comm, request);
  }
}

typedef struct ompi_datatype_t *dt_t;
typedef struct ompi_communicator_t *comm_t;
typedef mca_coll_base_module_t *module_t;

/* The arguments of each family, as one coll_cohort_args_t. */
#define REDUCTION_ARGS(k, s, r, n, t, o, rt)                                          \
  {                                                                                   \
    .kind = (k), .sbuf = (s), .rbuf = (r), .count = (n), .dtype = (t), .sdtype = (t), \
    .rdtype = (t), .op = (o), .root = (rt)                                            \
  }
#define BLOCK_ARGS(k, s, sc, st, r, rc, rt, ro)                                            \
  {                                                                                        \
    .kind = (k), .sbuf = (s), .scount = (sc), .sdtype = (st), .rbuf = (r), .rcount = (rc), \
    .rdtype = (rt), .root = (ro)                                                           \
  }

static int cohort_allreduce(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, comm_t c,
                            module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_ALLREDUCE, s, r, n, t, o, 0);
  return run_blocking(m, c, &a);
}
static int cohort_iallreduce(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, comm_t c,
                             ompi_request_t **q, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_ALLREDUCE, s, r, n, t, o, 0);
  return run_nonblocking(m, c, &a, q);
}
static int cohort_reduce(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, int root,
                         comm_t c, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_REDUCE, s, r, n, t, o, root);
  return run_blocking(m, c, &a);
}
static int cohort_ireduce(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, int root,
                          comm_t c, ompi_request_t **q, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_REDUCE, s, r, n, t, o, root);
  return run_nonblocking(m, c, &a, q);
}
static int cohort_reduce_scatter_block(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o,
                                       comm_t c, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_REDUCE_SCATTER_BLOCK, s, r, n, t, o, 0);
  return run_blocking(m, c, &a);
}
static int cohort_ireduce_scatter_block(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o,
                                        comm_t c, ompi_request_t **q, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_REDUCE_SCATTER_BLOCK, s, r, n, t, o, 0);
  return run_nonblocking(m, c, &a, q);
}
static int cohort_reduce_scatter(const void *s, void *r, const int *ns, dt_t t, struct ompi_op_t *o,
                                 comm_t c, module_t m) {
  coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_REDUCE_SCATTER, s, r, 0, t, o, 0);
  a.rcounts = ns;
  return run_blocking(m, c, &a);
}
static int cohort_ireduce_scatter(const void *s, void *r, const int *ns, dt_t t,
                                  struct ompi_op_t *o, comm_t c, ompi_request_t **q, module_t m) {
  coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_REDUCE_SCATTER, s, r, 0, t, o, 0);
  a.rcounts = ns;
  return run_nonblocking(m, c, &a, q);
}
static int cohort_scan(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, comm_t c,
                       module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_SCAN, s, r, n, t, o, 0);
  return run_blocking(m, c, &a);
}
static int cohort_iscan(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, comm_t c,
                        ompi_request_t **q, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_SCAN, s, r, n, t, o, 0);
  return run_nonblocking(m, c, &a, q);
}
static int cohort_exscan(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, comm_t c,
                         module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_EXSCAN, s, r, n, t, o, 0);
  return run_blocking(m, c, &a);
}
static int cohort_iexscan(const void *s, void *r, int n, dt_t t, struct ompi_op_t *o, comm_t c,
                          ompi_request_t **q, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_EXSCAN, s, r, n, t, o, 0);
  return run_nonblocking(m, c, &a, q);
}
static int cohort_bcast(void *b, int n, dt_t t, int root, comm_t c, module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_BCAST, NULL, b, n, t, MPI_OP_NULL, root);
  return run_blocking(m, c, &a);
}
static int cohort_ibcast(void *b, int n, dt_t t, int root, comm_t c, ompi_request_t **q,
                         module_t m) {
  const coll_cohort_args_t a = REDUCTION_ARGS(COLL_COHORT_BCAST, NULL, b, n, t, MPI_OP_NULL, root);
  return run_nonblocking(m, c, &a, q);
}
static int cohort_barrier(comm_t c, module_t m) {
  const coll_cohort_args_t a = {.kind = COLL_COHORT_BARRIER};
  return run_blocking(m, c, &a);
}
static int cohort_ibarrier(comm_t c, ompi_request_t **q, module_t m) {
  const coll_cohort_args_t a = {.kind = COLL_COHORT_BARRIER};
  return run_nonblocking(m, c, &a, q);
}

/* Allgather and alltoall take the same arguments; gather and scatter the same plus a root. */
#define COHORT_BLOCKS(name, kind)                                                               \
  static int cohort_##name(const void *s, int sc, dt_t st, void *r, int rc, dt_t rt, comm_t c,  \
                           module_t m) {                                                        \
    const coll_cohort_args_t a = BLOCK_ARGS(kind, s, sc, st, r, rc, rt, 0);                     \
    return run_blocking(m, c, &a);                                                              \
  }                                                                                             \
  static int cohort_i##name(const void *s, int sc, dt_t st, void *r, int rc, dt_t rt, comm_t c, \
                            ompi_request_t **q, module_t m) {                                   \
    const coll_cohort_args_t a = BLOCK_ARGS(kind, s, sc, st, r, rc, rt, 0);                     \
    return run_nonblocking(m, c, &a, q);                                                        \
  }
COHORT_BLOCKS(allgather, COLL_COHORT_ALLGATHER)
COHORT_BLOCKS(alltoall, COLL_COHORT_ALLTOALL)

#define COHORT_ROOTED_BLOCKS(name, kind)                                                        \
  static int cohort_##name(const void *s, int sc, dt_t st, void *r, int rc, dt_t rt, int root,  \
                           comm_t c, module_t m) {                                              \
    const coll_cohort_args_t a = BLOCK_ARGS(kind, s, sc, st, r, rc, rt, root);                  \
    return run_blocking(m, c, &a);                                                              \
  }                                                                                             \
  static int cohort_i##name(const void *s, int sc, dt_t st, void *r, int rc, dt_t rt, int root, \
                            comm_t c, ompi_request_t **q, module_t m) {                         \
    const coll_cohort_args_t a = BLOCK_ARGS(kind, s, sc, st, r, rc, rt, root);                  \
    return run_nonblocking(m, c, &a, q);                                                        \
  }
COHORT_ROOTED_BLOCKS(gather, COLL_COHORT_GATHER)
COHORT_ROOTED_BLOCKS(scatter, COLL_COHORT_SCATTER)

static int cohort_allgatherv(const void *s, int sc, dt_t st, void *r, const int *rcs,
                             const int *rds, dt_t rt, comm_t c, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_ALLGATHERV, s, sc, st, r, 0, rt, 0);
  a.rcounts = rcs, a.rdispls = rds;
  return run_blocking(m, c, &a);
}
static int cohort_iallgatherv(const void *s, int sc, dt_t st, void *r, const int *rcs,
                              const int *rds, dt_t rt, comm_t c, ompi_request_t **q, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_ALLGATHERV, s, sc, st, r, 0, rt, 0);
  a.rcounts = rcs, a.rdispls = rds;
  return run_nonblocking(m, c, &a, q);
}
static int cohort_gatherv(const void *s, int sc, dt_t st, void *r, const int *rcs, const int *rds,
                          dt_t rt, int root, comm_t c, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_GATHERV, s, sc, st, r, 0, rt, root);
  a.rcounts = rcs, a.rdispls = rds;
  return run_blocking(m, c, &a);
}
static int cohort_igatherv(const void *s, int sc, dt_t st, void *r, const int *rcs, const int *rds,
                           dt_t rt, int root, comm_t c, ompi_request_t **q, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_GATHERV, s, sc, st, r, 0, rt, root);
  a.rcounts = rcs, a.rdispls = rds;
  return run_nonblocking(m, c, &a, q);
}
static int cohort_scatterv(const void *s, const int *scs, const int *sds, dt_t st, void *r, int rc,
                           dt_t rt, int root, comm_t c, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_SCATTERV, s, 0, st, r, rc, rt, root);
  a.scounts = scs, a.sdispls = sds;
  return run_blocking(m, c, &a);
}
static int cohort_iscatterv(const void *s, const int *scs, const int *sds, dt_t st, void *r, int rc,
                            dt_t rt, int root, comm_t c, ompi_request_t **q, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_SCATTERV, s, 0, st, r, rc, rt, root);
  a.scounts = scs, a.sdispls = sds;
  return run_nonblocking(m, c, &a, q);
}
static int cohort_alltoallv(const void *s, const int *scs, const int *sds, dt_t st, void *r,
                            const int *rcs, const int *rds, dt_t rt, comm_t c, module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_ALLTOALLV, s, 0, st, r, 0, rt, 0);
  a.scounts = scs, a.sdispls = sds, a.rcounts = rcs, a.rdispls = rds;
  return run_blocking(m, c, &a);
}
static int cohort_ialltoallv(const void *s, const int *scs, const int *sds, dt_t st, void *r,
                             const int *rcs, const int *rds, dt_t rt, comm_t c, ompi_request_t **q,
                             module_t m) {
  coll_cohort_args_t a = BLOCK_ARGS(COLL_COHORT_ALLTOALLV, s, 0, st, r, 0, rt, 0);
  a.scounts = scs, a.sdispls = sds, a.rcounts = rcs, a.rdispls = rds;
  return run_nonblocking(m, c, &a, q);
}

/* ------------------------------------------------------------------ module */

/* Modules are enabled from the lowest priority up, so comm->c_coll holds what we would
 * replace: keep it (retained) as the fallback.  Without a fallback for an offered collective
 * the module declines. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
  mca_coll_cohort_module_t *m = MODULE(module);
#define COHORT_SAVE_ONE(name)                                                            \
  if (comm->c_coll->coll_##name == NULL || comm->c_coll->coll_##name##_module == NULL) { \
    return OMPI_ERROR;                                                                   \
  }                                                                                      \
  m->prev_##name = comm->c_coll->coll_##name;                                            \
  m->prev_##name##_module = comm->c_coll->coll_##name##_module;                          \
  OBJ_RETAIN(m->prev_##name##_module);
#define COHORT_SAVE_PREV(name, kind) \
  if (offered & (1 << (kind))) {     \
    COHORT_SAVE_ONE(name)            \
    COHORT_SAVE_ONE(i##name)         \
  }
  COHORT_FOR_EACH_COLL(COHORT_SAVE_PREV)
  m->state = coll_cohort_comm_new(comm);
  return m->state != NULL ? OMPI_SUCCESS : OMPI_ERROR;
}

/* ------------------------------------------------------------------ component */

static int cohort_register(void);
static int cohort_open(void);
static int cohort_close(void);
static int cohort_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static mca_coll_base_module_t *cohort_comm_query(struct ompi_communicator_t *comm, int *priority);

OMPI_MODULE_DECLSPEC extern mca_coll_base_component_2_0_0_t mca_coll_cohort_component;
mca_coll_base_component_2_0_0_t mca_coll_cohort_component = {
    .collm_version =
        {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "cohort",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = cohort_open,
            .mca_close_component = cohort_close,
            .mca_register_component_params = cohort_register,
        },
    .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .collm_init_query = cohort_init_query,
    .collm_comm_query = cohort_comm_query,
};

static int cohort_register(void) {
  mca_base_component_t *c = &mca_coll_cohort_component.collm_version;
  (void)mca_base_component_var_register(c, "enable", "Use Cohort for the collectives it supports",
                                        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3,
                                        MCA_BASE_VAR_SCOPE_READONLY, &params.enable);
  (void)mca_base_component_var_register(
      c, "priority", "Priority of the cohort coll component (tuned is 30)", MCA_BASE_VAR_TYPE_INT,
      NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &params.priority);
  (void)mca_base_component_var_register(
      c, "verbose",
      "0 quiet; 1 a summary per communicator when it ends (calls run on Cohort, fallbacks by "
      "reason); 2 also the first fallback of each kind; 3 every call",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &params.verbose);
  (void)mca_base_component_var_register(
      c, "host", "Run collectives on host buffers on Cohort too (default: device buffers only)",
      MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
      &params.host_buffers);
  (void)mca_base_component_var_register(
      c, "collectives",
      "Collectives Cohort runs (each with its nonblocking form), comma-separated: allreduce, "
      "bcast, reduce, allgather, allgatherv, reduce_scatter_block, reduce_scatter, alltoall, "
      "alltoallv, barrier, gather, gatherv, scatter, scatterv, scan, exscan; or all",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
      &params.collectives);
  (void)mca_base_component_var_register(
      c, "init_timeout",
      "Seconds each phase of a communicator's team creation waits for peers (Cohort's "
      "init_timeout); while a rank has not made the first collective, the others say so this "
      "often",
      MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
      &params.init_timeout);
  return OMPI_SUCCESS;
}

static int cohort_open(void) {
  output_stream = opal_output_open(NULL);
  opal_output_set_verbosity(output_stream, params.verbose);
  offered = coll_cohort_configure(&params, output);
  return OMPI_SUCCESS;
}

static int cohort_close(void) {
  if (progress_registered) opal_progress_unregister(cohort_progress);
  progress_registered = false;
  opal_output_close(output_stream);
  output_stream = -1;
  return OMPI_SUCCESS;
}

static int cohort_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}

/* A communicator made with the info key "coll_cohort_enable" = "false" (MPI_Comm_dup_with_info,
 * MPI_Comm_split_type, ...) keeps Open MPI's modules: its info is set before selection. */
static bool disabled_by_info(struct ompi_communicator_t *comm) {
  bool enable = true;
  int found = 0;
  if (comm->super.s_info == NULL) return false;
  opal_info_get_bool(comm->super.s_info, "coll_cohort_enable", &enable, &found);
  return found && !enable;
}

/* Inter-communicators, Cohort's own communicators and those whose info says so get no module.
 * One-rank communicators get one, for their device memory (Open MPI's self module would
 * touch it), at a priority above self's; their host calls fall back to it. */
static mca_coll_base_module_t *cohort_comm_query(struct ompi_communicator_t *comm, int *priority) {
  if (!params.enable || offered == 0 || OMPI_COMM_IS_INTER(comm) || coll_cohort_busy() ||
      disabled_by_info(comm)) {
    return NULL;
  }
  mca_coll_cohort_module_t *m = OBJ_NEW(mca_coll_cohort_module_t);
  if (m == NULL) return NULL;
  m->super.coll_module_enable = module_enable;
#define COHORT_OFFER(name, kind)            \
  if (offered & (1 << (kind))) {            \
    m->super.coll_##name = cohort_##name;   \
    m->super.coll_i##name = cohort_i##name; \
  }
  COHORT_FOR_EACH_COLL(COHORT_OFFER)
  /* Above self (75), which takes one-rank communicators otherwise. */
  *priority = ompi_comm_size(comm) == 1 && params.priority <= 75 ? 76 : params.priority;
  return &m->super;
}
