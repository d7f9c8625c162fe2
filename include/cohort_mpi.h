/*
 * Cohort's MPI entry points: teams created from an MPI communicator, and the MPI datatype and
 * op of Cohort's types.  libcohort.so has them (it links MPI); Cohort's libnccl.so.2 does not.
 */
#ifndef COHORT_MPI_H
#define COHORT_MPI_H

#include <mpi.h>

#include "cohort.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The MPI datatype of a Cohort element type (MPI_INT8_T ... MPI_UINT64_T, MPI_FLOAT,
 * MPI_DOUBLE), for moving or reducing the same buffers through MPI.  fp16 and bf16 have no
 * standard MPI type: COHORT_ERR_NOT_SUPPORTED. */
COHORT_API cohort_status_t cohort_dtype_to_mpi(cohort_dtype_t dtype, MPI_Datatype *datatype);
/* The MPI op of a Cohort reduction (MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX); AVG has none:
 * COHORT_ERR_NOT_SUPPORTED. */
COHORT_API cohort_status_t cohort_op_to_mpi(cohort_op_t op, MPI_Op *mpi_op);

/* Collective over comm; blocks until every rank agrees on the outcome.  config may be NULL.
 * On failure every rank returns the same status, naming the first failing rank and phase
 * (or, for COHORT_ERR_TIMEOUT, the ranks that never arrived).  Check-in messages use the 64
 * tags at the top of comm's tag range (MPI_TAG_UB - 63 .. MPI_TAG_UB); the application must
 * not use them on comm.  Everything after check-in runs on a private duplicate of comm. */
COHORT_API cohort_status_t cohort_team_create_mpi(MPI_Comm comm, const cohort_team_config_t *config,
                                                  cohort_team_t *team);

/* Nonblocking form: post returns a team handle at once; drive it with
 * cohort_team_create_test() until it returns something other than COHORT_IN_PROGRESS.
 * On failure the handle stays valid (queries fail) until cohort_team_destroy(). */
COHORT_API cohort_status_t cohort_team_create_mpi_post(MPI_Comm comm,
                                                       const cohort_team_config_t *config,
                                                       cohort_team_t *team);
#ifdef __cplusplus
}
#endif

#endif /* COHORT_MPI_H */
