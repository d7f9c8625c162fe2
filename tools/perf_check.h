// cohort_perf --check: inputs whose reductions are exact in every dtype, the output each rank
// must then hold, and the comparison, bit for bit.
//
// Rank q's input element j is a small positive integer, a hash of (q, j mod kPeriod), so a
// block that lands in the wrong place (or comes from the wrong rank) is caught: sum, min and
// max take values 1..m with m chosen so that the whole team's sum stays exact (int8 <= 127,
// uint8 <= 255, bf16 <= 256, fp16 <= 2048); prod takes 1 or 2 (integers wrap exactly, fp16
// gets at most 15 twos); avg takes a(j) + 1 + d(q) with d summing to 0 over the team, so the
// sum divides by the team size.  Integer sums and products wrap as two's complement, as Cohort
// defines them.
#pragma once

#include <cstddef>
#include <vector>

#include "cohort.h"
#include "perf_coll.h"

namespace cohort::perf {

class Pattern {
 public:
  static constexpr size_t kPeriod = 4099;  // prime: a shift by fewer elements changes values

  Pattern(cohort_dtype_t dtype, cohort_op_t op, int ranks);
  // Writes rank `rank`'s input elements [first, first + count) to dst.
  void input(int rank, size_t first, size_t count, void *dst) const;
  // Writes the reduction over all ranks of elements [first, first + count) to dst.
  void reduced(size_t first, size_t count, void *dst) const;

 private:
  void copy_periodic(const std::vector<char> &period, size_t first, size_t count, void *dst) const;
  size_t elem_size_;
  std::vector<std::vector<char>> inputs_;  // [rank]: kPeriod elements, as the dtype
  std::vector<char> reduced_;
};

// Writes what `call` must leave in output_region(call), laid out as that region.
void expected_output(const Call &call, const Pattern &pattern, void *dst);

// Overwrites a region with the complement of what it should receive, so a call that leaves
// an element unwritten is caught (also when the previous iteration wrote the right value).
void poison(const Region &region, const void *expected, size_t elem_size);

// Elements of `got` that differ from `want` in any bit.
size_t count_wrong(const Region &got, const void *want, size_t elem_size);

}  // namespace cohort::perf
