/* The boundary between the Open MPI glue (C, Open MPI's internal headers, one file per coll
 * API version: v41/ for 4.1's coll API 2.0.0) and the component's logic (C++, <mpi.h> and
 * Cohort's public cohort.h only).  The glue owns Open MPI's objects: the component, its MCA
 * parameters, its output stream, the module, the saved functions of the module below us.  The
 * logic owns everything Cohort: decisions, teams, counts.  Every collective entry returns 1
 * when Cohort ran the call (its MPI error code in *rc), 0 when the glue must run the saved
 * function instead. */
#ifndef COHORT_OMPI_COLL_COHORT_H
#define COHORT_OMPI_COLL_COHORT_H

#include <mpi.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The MCA parameters (coll_cohort_*): the glue registers these fields as their storage. */
typedef struct coll_cohort_params {
  bool enable;             /* false: never selected */
  int priority;            /* above tuned (30) by default */
  int verbose;             /* 0 quiet; 1 a summary per communicator at its end; 2 + the first
                              fallback of each kind; 3 + every call */
  bool host_buffers;       /* true: host buffers run on Cohort too (default: fall back) */
  const char *collectives; /* comma-separated names, or "all" */
  double init_timeout;     /* seconds: the team's creation phases wait this long for peers, and
                              the first collective says every this often that a rank is missing */
  bool uniform_memory;     /* true: every rank passes the same kind of memory to each call, so
                              blocking calls skip the agreement on it (see entry.cc) */
} coll_cohort_params_t;

#define COLL_COHORT_PARAMS_DEFAULT \
  { true, 40, 0, false, "all", 300.0, false }

/* Where the logic's messages go: level 0 is a warning (always shown), 1-3 the verbose levels
 * of coll_cohort_verbose.  The glue writes them to its opal_output stream. */
typedef void (*coll_cohort_output_fn_t)(int level, const char *text);

/* The collectives, as MPI-3.1 names them on intra-communicators; each also stands for its
 * nonblocking form (MPI_Iallreduce, ...).  coll_cohort_configure()'s result has bit
 * (1 << kind) set for each collective the module offers. */
typedef enum coll_cohort_kind {
  COLL_COHORT_ALLREDUCE,
  COLL_COHORT_BCAST,
  COLL_COHORT_REDUCE,
  COLL_COHORT_ALLGATHER,
  COLL_COHORT_ALLGATHERV,
  COLL_COHORT_REDUCE_SCATTER_BLOCK,
  COLL_COHORT_REDUCE_SCATTER,
  COLL_COHORT_ALLTOALL,
  COLL_COHORT_ALLTOALLV,
  COLL_COHORT_BARRIER,
  COLL_COHORT_GATHER,
  COLL_COHORT_GATHERV,
  COLL_COHORT_SCATTER,
  COLL_COHORT_SCATTERV,
  COLL_COHORT_SCAN,
  COLL_COHORT_EXSCAN,
  COLL_COHORT_NUM_KINDS
} coll_cohort_kind_t;

/* Called once, at component open: keeps the parameters and the output function (NULL:
 * stderr) and returns the collectives to offer (an unknown name in `collectives` is warned
 * about and ignored; a coll_cohort_init_timeout that is not positive is warned about and
 * replaced by the default). */
int coll_cohort_configure(const coll_cohort_params_t *params, coll_cohort_output_fn_t output);

/* 1 while this thread is inside Cohort (creating a team, running a collective): communicators
 * made then are Cohort's own and get no module, and collectives reached then fall back. */
int coll_cohort_busy(void);

typedef struct coll_cohort_comm coll_cohort_comm_t;

/* A communicator's state (module enable); its team is created at the first eligible call. */
coll_cohort_comm_t *coll_cohort_comm_new(MPI_Comm comm);
/* At the communicator's end: destroys its team and reports (verbose >= 1). */
void coll_cohort_comm_free(coll_cohort_comm_t *state);

/* One collective call with MPI's arguments.  Reductions and bcast use sbuf/rbuf, count and
 * dtype; the block collectives the send and receive sides; v-variants their count and
 * displacement arrays (reduce_scatter: rcounts).  Unused fields are ignored. */
typedef struct coll_cohort_args {
  coll_cohort_kind_t kind;
  const void *sbuf;
  int scount;
  const int *scounts;
  const int *sdispls;
  MPI_Datatype sdtype;
  void *rbuf;
  int rcount;
  const int *rcounts;
  const int *rdispls;
  MPI_Datatype rdtype;
  int count; /* reductions, bcast */
  MPI_Datatype dtype;
  MPI_Op op;
  int root;
} coll_cohort_args_t;

/* A nonblocking collective's progress on the logic's side. */
typedef struct coll_cohort_request coll_cohort_request_t;

/* What the glue does with a call (coll_cohort_call's result). */
enum {
  COLL_COHORT_FALL_BACK = 0, /* run the saved module's function with the caller's arguments */
  COLL_COHORT_RAN = 1,       /* Cohort took it: blocking, done with its MPI code in *rc;
                                nonblocking, *request is set, or *rc says why posting failed */
  COLL_COHORT_STAGED = 2     /* run the saved function (its nonblocking form for a
                                nonblocking call) on *staged, whose device buffers are host
                                copies, then pass its code to coll_cohort_staged_done(*request) */
};

/* Decides and runs one call.  `nonblocking`: the MPI_I... form, whose RAN request
 * coll_cohort_request_test completes.  *staged is written for COLL_COHORT_STAGED only. */
int coll_cohort_call(coll_cohort_comm_t *state, const coll_cohort_args_t *args, int nonblocking,
                     coll_cohort_request_t **request, coll_cohort_args_t *staged, int *rc);

/* A RAN request: 1 when it completed (its MPI code in *rc), 0 while in progress.  Progresses
 * Cohort's queue; called from Open MPI's progress loop. */
int coll_cohort_request_test(coll_cohort_request_t *request, int *rc);

/* A STAGED call's end: the saved function returned (blocking) or its request completed
 * (nonblocking) with `rc`; copies the results back to device memory, frees the request and
 * returns the call's MPI code. */
int coll_cohort_staged_done(coll_cohort_request_t *request, int rc);

/* Frees a RAN request once it completed. */
void coll_cohort_request_free(coll_cohort_request_t *request);

#ifdef __cplusplus
}
#endif

#endif /* COHORT_OMPI_COLL_COHORT_H */
