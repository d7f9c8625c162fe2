#include "mpi_map.h"

#include <utility>
#include <vector>

namespace cohort::ompi {
namespace {

// MPI types of the same meaning as a standard one that cohort_dtype_to_mpi names (MPI_INT for
// MPI_INT32_T), by kind and size.
enum class Kind { kSigned, kUnsigned, kFloat };

struct Alias {
  MPI_Datatype datatype;
  Kind kind;
  int size;  // bytes; 0: ask MPI (Fortran types, whose size the Fortran compiler chose)
};

// Open MPI's mpi.h declares every Fortran type, also those its Fortran compiler lacks (their
// size is then 0, which maps to nothing).
const std::vector<Alias> &aliases() {
  static const std::vector<Alias> rows = {
      {MPI_SIGNED_CHAR, Kind::kSigned, 1},
      {MPI_UNSIGNED_CHAR, Kind::kUnsigned, 1},
      {MPI_INT, Kind::kSigned, sizeof(int)},
      {MPI_UNSIGNED, Kind::kUnsigned, sizeof(unsigned)},
      {MPI_LONG, Kind::kSigned, sizeof(long)},
      {MPI_UNSIGNED_LONG, Kind::kUnsigned, sizeof(unsigned long)},
      {MPI_LONG_LONG, Kind::kSigned, sizeof(long long)},
      {MPI_UNSIGNED_LONG_LONG, Kind::kUnsigned, sizeof(unsigned long long)},
      {MPI_INTEGER, Kind::kSigned, 0},
      {MPI_INTEGER4, Kind::kSigned, 0},
      {MPI_INTEGER8, Kind::kSigned, 0},
      {MPI_REAL, Kind::kFloat, 0},
      {MPI_REAL4, Kind::kFloat, 0},
      {MPI_REAL8, Kind::kFloat, 0},
      {MPI_DOUBLE_PRECISION, Kind::kFloat, 0},
  };
  return rows;
}

std::optional<cohort_dtype_t> dtype_of(Kind kind, int size) {
  switch (kind) {
    case Kind::kSigned:
      if (size == 1) return COHORT_INT8;
      if (size == 4) return COHORT_INT32;
      if (size == 8) return COHORT_INT64;
      return std::nullopt;
    case Kind::kUnsigned:
      if (size == 1) return COHORT_UINT8;
      if (size == 4) return COHORT_UINT32;
      if (size == 8) return COHORT_UINT64;
      return std::nullopt;
    case Kind::kFloat:
      if (size == 4) return COHORT_FLOAT32;
      if (size == 8) return COHORT_FLOAT64;
      return std::nullopt;
  }
  return std::nullopt;
}

// What Cohort's mapping (cohort_dtype_to_mpi, cohort_op_to_mpi) answers for each of its
// `count` values that has a standard MPI counterpart: asked once, looked up on every call.
template <typename CohortT, typename MpiT>
using StandardRows = std::vector<std::pair<MpiT, CohortT>>;

template <typename CohortT, typename MpiT>
StandardRows<CohortT, MpiT> ask_cohort(int count, cohort_status_t (*to_mpi)(CohortT, MpiT *)) {
  StandardRows<CohortT, MpiT> rows;
  for (int value = 0; value < count; ++value) {
    MpiT handle;
    if (to_mpi(static_cast<CohortT>(value), &handle) == COHORT_SUCCESS) {
      rows.emplace_back(handle, static_cast<CohortT>(value));
    }
  }
  return rows;
}

template <typename CohortT, typename MpiT>
std::optional<CohortT> lookup(const StandardRows<CohortT, MpiT> &rows, MpiT handle) {
  for (const auto &[mpi, cohort] : rows) {
    if (mpi == handle) return cohort;
  }
  return std::nullopt;
}

}  // namespace

std::optional<cohort_dtype_t> reduction_dtype(MPI_Datatype datatype) {
  static const auto standard = ask_cohort(COHORT_NUM_DTYPES, cohort_dtype_to_mpi);
  if (auto dtype = lookup(standard, datatype)) return dtype;
  for (const Alias &row : aliases()) {
    if (row.datatype != datatype) continue;
    int size = row.size;
    if (size == 0 && MPI_Type_size(datatype, &size) != MPI_SUCCESS) return std::nullopt;
    return dtype_of(row.kind, size);
  }
  return std::nullopt;
}

std::optional<cohort_op_t> reduction_op(MPI_Op op) {
  static const auto standard = ask_cohort(COHORT_NUM_OPS, cohort_op_to_mpi);
  return lookup(standard, op);
}

std::optional<TypeLayout> type_layout(MPI_Datatype datatype) {
  if (datatype == MPI_DATATYPE_NULL) return std::nullopt;
  int size = 0;
  MPI_Aint lb = 0;
  TypeLayout l;
  if (MPI_Type_size(datatype, &size) != MPI_SUCCESS || size < 0 ||
      MPI_Type_get_extent(datatype, &lb, &l.extent) != MPI_SUCCESS ||
      MPI_Type_get_true_extent(datatype, &l.true_lb, &l.true_extent) != MPI_SUCCESS) {
    return std::nullopt;
  }
  l.size = static_cast<size_t>(size);
  return l;
}

}  // namespace cohort::ompi
