// The MPI datatype and op of Cohort's types (cohort_mpi.h), in the MPI part of the library.
#include <iterator>

#include "coll/dtype.h"
#include "coll/dtype_mpi.h"
#include "cohort_mpi.h"

namespace cohort::coll {
namespace {

// Indexed by cohort_dtype_t; MPI_DATATYPE_NULL: MPI has no standard one.  Not constexpr: an
// MPI handle need not be a constant expression (Open MPI's are addresses).
const MPI_Datatype *mpi_types() {
  static const MPI_Datatype types[] = {MPI_INT8_T,        MPI_UINT8_T,       MPI_INT32_T,
                                       MPI_UINT32_T,      MPI_INT64_T,       MPI_UINT64_T,
                                       MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_FLOAT,
                                       MPI_DOUBLE};
  static_assert(std::size(types) == COHORT_NUM_DTYPES, "every dtype mapped");
  return types;
}

}  // namespace

Status mpi_datatype(int dtype, MPI_Datatype *out) {
  Status s = check_dtype(dtype);
  if (is_error(s)) return s;
  const MPI_Datatype mpi = mpi_types()[dtype];
  if (mpi == MPI_DATATYPE_NULL) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "dtype %s has no standard MPI datatype (move it as MPI_UINT16_T; reduce it "
                 "widened to MPI_FLOAT)",
                 dtype_name(static_cast<cohort_dtype_t>(dtype)));
  }
  *out = mpi;
  return COHORT_SUCCESS;
}

Status mpi_op(int op, MPI_Op *out) {
  Status s = check_op(op);
  if (is_error(s)) return s;
  const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_OP_NULL};
  static_assert(std::size(ops) == COHORT_NUM_OPS, "every op mapped");
  if (ops[op] == MPI_OP_NULL) {  // avg
    return fail(COHORT_ERR_NOT_SUPPORTED, "op avg has no MPI op (reduce with MPI_SUM, divide)");
  }
  *out = ops[op];
  return COHORT_SUCCESS;
}

}  // namespace cohort::coll

extern "C" {

cohort_status_t cohort_dtype_to_mpi(cohort_dtype_t dtype, MPI_Datatype *datatype) {
  if (datatype == nullptr) return cohort::fail(COHORT_ERR_INVALID_ARG, "datatype (output) is NULL");
  return cohort::coll::mpi_datatype(dtype, datatype);
}

cohort_status_t cohort_op_to_mpi(cohort_op_t op, MPI_Op *mpi_op) {
  if (mpi_op == nullptr) return cohort::fail(COHORT_ERR_INVALID_ARG, "mpi_op (output) is NULL");
  return cohort::coll::mpi_op(op, mpi_op);
}

}  // extern "C"
