// The MPI datatype / op of the same meaning as Cohort's (cohort_dtype_to_mpi,
// cohort_op_to_mpi); the MPI part of the library.
#pragma once

#include <mpi.h>

#include "core/status.h"

namespace cohort::coll {

Status mpi_datatype(int dtype, MPI_Datatype *out);
Status mpi_op(int op, MPI_Op *out);

}  // namespace cohort::coll
