#include "coll/dtype.h"

#include <cstdint>
#include <iterator>
#include <string>

namespace cohort::coll {
namespace {

struct DtypeInfo {
  cohort_dtype_t dtype;
  const char *name;
  size_t size;
  bool is_float;
};

// Indexed by cohort_dtype_t; the static_assert below catches an enum that grew.  (Their MPI
// types: dtype_mpi.cc, in the MPI part of the library.)
constexpr DtypeInfo kDtypes[] = {
    {COHORT_INT8, "int8", sizeof(int8_t), false},
    {COHORT_UINT8, "uint8", sizeof(uint8_t), false},
    {COHORT_INT32, "int32", sizeof(int32_t), false},
    {COHORT_UINT32, "uint32", sizeof(uint32_t), false},
    {COHORT_INT64, "int64", sizeof(int64_t), false},
    {COHORT_UINT64, "uint64", sizeof(uint64_t), false},
    {COHORT_FLOAT16, "fp16", 2, true},
    {COHORT_BFLOAT16, "bf16", 2, true},
    {COHORT_FLOAT32, "fp32", sizeof(float), true},
    {COHORT_FLOAT64, "fp64", sizeof(double), true},
};
static_assert(std::size(kDtypes) == COHORT_NUM_DTYPES, "every dtype described");

constexpr struct {
  const char *name;
  cohort_dtype_t dtype;
} kDtypeAliases[] = {
    {"half", COHORT_FLOAT16},   {"bfloat16", COHORT_BFLOAT16}, {"float", COHORT_FLOAT32},
    {"double", COHORT_FLOAT64}, {"int", COHORT_INT32},
};

// Indexed by cohort_op_t.
constexpr struct {
  const char *name;
} kOps[] = {{"sum"}, {"prod"}, {"min"}, {"max"}, {"avg"}};
static_assert(std::size(kOps) == COHORT_NUM_OPS, "every op described");

bool valid_dtype(int dtype) { return dtype >= 0 && dtype < COHORT_NUM_DTYPES; }
bool valid_op(int op) { return op >= 0 && op < COHORT_NUM_OPS; }

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

size_t dtype_size(cohort_dtype_t dtype) { return valid_dtype(dtype) ? kDtypes[dtype].size : 0; }

const char *dtype_name(cohort_dtype_t dtype) {
  return valid_dtype(dtype) ? kDtypes[dtype].name : "invalid";
}

bool dtype_is_float(cohort_dtype_t dtype) { return valid_dtype(dtype) && kDtypes[dtype].is_float; }

std::optional<cohort_dtype_t> parse_dtype(std::string_view name) {
  for (const DtypeInfo &info : kDtypes) {
    if (equals_ignoring_case(name, info.name)) return info.dtype;
  }
  for (const auto &alias : kDtypeAliases) {
    if (equals_ignoring_case(name, alias.name)) return alias.dtype;
  }
  return std::nullopt;
}

const char *op_name(cohort_op_t op) { return valid_op(op) ? kOps[op].name : "invalid"; }

std::optional<cohort_op_t> parse_op(std::string_view name) {
  for (int op = 0; op < COHORT_NUM_OPS; ++op) {
    if (equals_ignoring_case(name, kOps[op].name)) return static_cast<cohort_op_t>(op);
  }
  return std::nullopt;
}

bool op_supported(cohort_dtype_t dtype, cohort_op_t op) {
  return valid_dtype(dtype) && valid_op(op);
}

Status check_dtype(int dtype) {
  if (!valid_dtype(dtype)) {
    return failf(COHORT_ERR_INVALID_ARG, "dtype=%d is not a cohort_dtype_t", dtype);
  }
  return COHORT_SUCCESS;
}

Status check_op(int op) {
  if (!valid_op(op)) return failf(COHORT_ERR_INVALID_ARG, "op=%d is not a cohort_op_t", op);
  return COHORT_SUCCESS;
}

Status check_reduction(int dtype, int op) {
  Status s = check_dtype(dtype);
  if (s == COHORT_SUCCESS) s = check_op(op);
  if (s != COHORT_SUCCESS) return s;
  auto d = static_cast<cohort_dtype_t>(dtype);
  auto o = static_cast<cohort_op_t>(op);
  if (!op_supported(d, o)) {
    return failf(COHORT_ERR_NOT_SUPPORTED, "op %s is not defined for dtype %s", op_name(o),
                 dtype_name(d));
  }
  return COHORT_SUCCESS;
}

}  // namespace cohort::coll
