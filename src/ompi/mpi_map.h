// MPI datatypes and ops in Cohort's terms.  Reductions need a predefined type Cohort has and
// one of sum / prod / min / max; data movement takes any contiguous type, as bytes.  The
// standard types and ops come from Cohort's own mapping (cohort_dtype_to_mpi,
// cohort_op_to_mpi); C types of the same meaning and Fortran types are added here.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "cohort_mpi.h"

namespace cohort::ompi {

// The Cohort element type of a predefined MPI type (C or Fortran), if Cohort reduces it.
// Fortran types are sized by asking MPI, which needs MPI initialised.
std::optional<cohort_dtype_t> reduction_dtype(MPI_Datatype datatype);

// MPI_SUM / MPI_PROD / MPI_MIN / MPI_MAX; nothing for other predefined ops and user ops.
std::optional<cohort_op_t> reduction_op(MPI_Op op);

// How MPI lays out the elements of a type (MPI_Type_size, MPI_Type_get_extent and
// MPI_Type_get_true_extent).
struct TypeLayout {
  size_t size = 0;           // bytes of data in one element
  MPI_Aint extent = 0;       // from one element to the next: the unit of displacements
  MPI_Aint true_lb = 0;      // the first byte of data from the element's address
  MPI_Aint true_extent = 0;  // from the first byte of data to the last
  // Elements lie back to back without gaps, their data at the address given: `count` of them
  // are count * size bytes that Cohort can move as they are.
  bool contiguous() const {
    return true_lb == 0 && true_extent == static_cast<MPI_Aint>(size) &&
           extent == static_cast<MPI_Aint>(size);
  }
};
// Nothing when MPI refuses the type (MPI_DATATYPE_NULL): ask only about a type the call uses.
std::optional<TypeLayout> type_layout(MPI_Datatype datatype);

}  // namespace cohort::ompi
