// MPI datatypes and ops in Cohort's terms.  Reductions need a predefined type Cohort has and
// one of sum / prod / min / max; data movement takes any contiguous type, as bytes.  The
// standard types and ops come from Cohort's own mapping (cohort_dtype_to_mpi,
// cohort_op_to_mpi); C types of the same meaning and Fortran types are added here.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "cohort.h"

namespace cohort::ompi {

// The Cohort element type of a predefined MPI type (C or Fortran), if Cohort reduces it.
// Fortran types are sized by asking MPI, which needs MPI initialised.
std::optional<cohort_dtype_t> reduction_dtype(MPI_Datatype datatype);

// MPI_SUM / MPI_PROD / MPI_MIN / MPI_MAX; nothing for other predefined ops and user ops.
std::optional<cohort_op_t> reduction_op(MPI_Op op);

// Bytes of `count` elements when they lie back to back without gaps (predefined types and
// derived types without holes); nothing otherwise.  Needs MPI initialised.
std::optional<size_t> contiguous_bytes(MPI_Datatype datatype, int count);

}  // namespace cohort::ompi
