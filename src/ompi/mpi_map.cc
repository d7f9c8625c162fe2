#include "ompi/mpi_map.h"

#include <vector>

namespace cohort::ompi {
namespace {

enum class Kind { kSigned, kUnsigned, kFloat };

struct TypeRow {
  MPI_Datatype datatype;
  Kind kind;
  int size;  // bytes; 0: ask MPI (Fortran types, whose size the Fortran compiler chose)
};

const std::vector<TypeRow> &type_table() {
  static const std::vector<TypeRow> rows = {
      {MPI_INT8_T, Kind::kSigned, 1},
      {MPI_SIGNED_CHAR, Kind::kSigned, 1},
      {MPI_UINT8_T, Kind::kUnsigned, 1},
      {MPI_UNSIGNED_CHAR, Kind::kUnsigned, 1},
      {MPI_INT, Kind::kSigned, sizeof(int)},
      {MPI_INT32_T, Kind::kSigned, 4},
      {MPI_UNSIGNED, Kind::kUnsigned, sizeof(unsigned)},
      {MPI_UINT32_T, Kind::kUnsigned, 4},
      {MPI_LONG, Kind::kSigned, sizeof(long)},
      {MPI_UNSIGNED_LONG, Kind::kUnsigned, sizeof(unsigned long)},
      {MPI_LONG_LONG, Kind::kSigned, sizeof(long long)},
      {MPI_UNSIGNED_LONG_LONG, Kind::kUnsigned, sizeof(unsigned long long)},
      {MPI_INT64_T, Kind::kSigned, 8},
      {MPI_UINT64_T, Kind::kUnsigned, 8},
      {MPI_FLOAT, Kind::kFloat, sizeof(float)},
      {MPI_DOUBLE, Kind::kFloat, sizeof(double)},
      {MPI_INTEGER, Kind::kSigned, 0},
      {MPI_REAL, Kind::kFloat, 0},
      {MPI_DOUBLE_PRECISION, Kind::kFloat, 0},
#ifdef MPI_INTEGER4
      {MPI_INTEGER4, Kind::kSigned, 4},
#endif
#ifdef MPI_INTEGER8
      {MPI_INTEGER8, Kind::kSigned, 8},
#endif
#ifdef MPI_REAL4
      {MPI_REAL4, Kind::kFloat, 4},
#endif
#ifdef MPI_REAL8
      {MPI_REAL8, Kind::kFloat, 8},
#endif
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

}  // namespace

std::optional<cohort_dtype_t> reduction_dtype(MPI_Datatype datatype) {
  for (const TypeRow &row : type_table()) {
    if (row.datatype != datatype) continue;
    int size = row.size;
    if (size == 0 && MPI_Type_size(datatype, &size) != MPI_SUCCESS) return std::nullopt;
    return dtype_of(row.kind, size);
  }
  return std::nullopt;
}

std::optional<cohort_op_t> reduction_op(MPI_Op op) {
  if (op == MPI_SUM) return COHORT_SUM;
  if (op == MPI_PROD) return COHORT_PROD;
  if (op == MPI_MIN) return COHORT_MIN;
  if (op == MPI_MAX) return COHORT_MAX;
  return std::nullopt;
}

std::optional<size_t> contiguous_bytes(MPI_Datatype datatype, int count) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (count < 0 || MPI_Type_size(datatype, &size) != MPI_SUCCESS ||
      MPI_Type_get_extent(datatype, &lb, &extent) != MPI_SUCCESS ||
      MPI_Type_get_true_extent(datatype, &true_lb, &true_extent) != MPI_SUCCESS) {
    return std::nullopt;
  }
  // No holes inside an element, none between elements, data starting at the address given.
  if (true_lb != 0 || true_extent != size || extent != size) return std::nullopt;
  return static_cast<size_t>(size) * static_cast<size_t>(count);
}

}  // namespace cohort::ompi
