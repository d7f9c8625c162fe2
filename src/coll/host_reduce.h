// CPU reductions for host-memory collectives: elementwise OP over buffers of any dtype.
//
// Contract of every function here:
// - dtype and op are valid (check them with check_reduction() where they enter Cohort); an
//   invalid value logs a warning and leaves the buffers unchanged.
// - Pointers are aligned to their element type, nothing more.  count == 0 touches nothing, so
//   pointers may then be null.
// - Integer sum and prod wrap around modulo 2^bits, signed types included (they are computed
//   in the unsigned type, so overflow is never undefined behaviour).
// - fp16 and bf16 compute in fp32 and round to nearest even when stored.
// - min and max of floating-point values propagate NaN: if either operand is NaN, the result
//   is NaN (which NaN's payload is unspecified); min(-0, +0) may return either zero.
// - COHORT_AVG reduces as COHORT_SUM: a collective reduces every contribution with the op,
//   then calls finalize_avg() once on the total.
// - Floating-point results follow the order of operands: reduce_multi combines ins[0], ins[1],
//   ... left to right, so a caller wanting the same bits on every rank keeps the order fixed.
#pragma once

#include <cstddef>

#include "cohort.h"

namespace cohort::coll {

// inout[i] = inout[i] OP in[i] for i < count.  in must not overlap inout.
void reduce_into(void *inout, const void *in, size_t count, cohort_dtype_t dtype, cohort_op_t op);

// out[i] = ins[0][i] OP ins[1][i] OP ... OP ins[nin - 1][i] for i < count, nin >= 1.
// out may be ins[0] (exactly, not a partial overlap); it must not overlap any other input.
// fp16 and bf16 accumulate all nin inputs in fp32 and round once, when storing out.
void reduce_multi(void *out, const void *const *ins, int nin, size_t count, cohort_dtype_t dtype,
                  cohort_op_t op);

// inout[i] /= team_size: the final step of COHORT_AVG (team_size >= 1).  Integers divide
// truncating toward zero.  fp16 and bf16 divide in fp32 and round again, so their average
// rounds twice: once when the sum was stored, once here.
void finalize_avg(void *inout, size_t count, cohort_dtype_t dtype, int team_size);

}  // namespace cohort::coll
