// Facts about element types and reduction operators: sizes, the names logs and cohort_perf
// (-d, -o) use, and validation of enum values that arrive through the C API.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "cohort.h"
#include "core/status.h"

namespace cohort::coll {

// Bytes per element; 0 for a value that is not a cohort_dtype_t.
size_t dtype_size(cohort_dtype_t dtype);

// "int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64";
// "invalid" for a value that is not a cohort_dtype_t.
const char *dtype_name(cohort_dtype_t dtype);

// A name from dtype_name() or one of the aliases "half", "bfloat16", "float", "double" and
// "int" (int32), in any case.
std::optional<cohort_dtype_t> parse_dtype(std::string_view name);

bool dtype_is_float(cohort_dtype_t dtype);  // fp16, bf16, fp32, fp64

// "sum", "prod", "min", "max", "avg"; "invalid" for a value that is not a cohort_op_t.
const char *op_name(cohort_op_t op);
std::optional<cohort_op_t> parse_op(std::string_view name);  // any case

// Every op is defined for every dtype.  On integers, sum and prod wrap around (two's
// complement, also for signed types) and avg is that sum divided by the team size, truncated
// toward zero, so it is only the true mean while the sum does not wrap.
bool op_supported(cohort_dtype_t dtype, cohort_op_t op);

// COHORT_SUCCESS, or COHORT_ERR_INVALID_ARG with a last error such as "dtype=12 is not a
// cohort_dtype_t".  They take int so that the check itself reads any value a C caller passed.
Status check_dtype(int dtype);
Status check_op(int op);

// check_dtype, check_op, then COHORT_ERR_NOT_SUPPORTED if op_supported() says no.
Status check_reduction(int dtype, int op);

}  // namespace cohort::coll
