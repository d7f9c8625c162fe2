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
} coll_cohort_params_t;

#define COLL_COHORT_PARAMS_DEFAULT \
  { true, 40, 0, false, "all", 300.0 }

/* Where the logic's messages go: level 0 is a warning (always shown), 1-3 the verbose levels
 * of coll_cohort_verbose.  The glue writes them to its opal_output stream. */
typedef void (*coll_cohort_output_fn_t)(int level, const char *text);

/* Bits of coll_cohort_configure()'s result: which collectives the module offers. */
enum {
  COLL_COHORT_ALLREDUCE = 1 << 0,
  COLL_COHORT_BCAST = 1 << 1,
  COLL_COHORT_REDUCE = 1 << 2,
  COLL_COHORT_ALLGATHER = 1 << 3,
  COLL_COHORT_REDUCE_SCATTER_BLOCK = 1 << 4,
  COLL_COHORT_ALLTOALL = 1 << 5,
  COLL_COHORT_BARRIER = 1 << 6
};

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

int coll_cohort_allreduce(coll_cohort_comm_t *state, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype dtype, MPI_Op op, int *rc);
int coll_cohort_bcast(coll_cohort_comm_t *state, void *buf, int count, MPI_Datatype dtype, int root,
                      int *rc);
int coll_cohort_reduce(coll_cohort_comm_t *state, const void *sbuf, void *rbuf, int count,
                       MPI_Datatype dtype, MPI_Op op, int root, int *rc);
int coll_cohort_allgather(coll_cohort_comm_t *state, const void *sbuf, int scount,
                          MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                          int *rc);
int coll_cohort_reduce_scatter_block(coll_cohort_comm_t *state, const void *sbuf, void *rbuf,
                                     int rcount, MPI_Datatype dtype, MPI_Op op, int *rc);
int coll_cohort_alltoall(coll_cohort_comm_t *state, const void *sbuf, int scount,
                         MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype, int *rc);
int coll_cohort_barrier(coll_cohort_comm_t *state, int *rc);

#ifdef __cplusplus
}
#endif

#endif /* COHORT_OMPI_COLL_COHORT_H */
