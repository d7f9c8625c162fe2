#include "perf_check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "coll/dtype.h"
#include "coll/half.h"

namespace cohort::perf {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The largest team-wide result that stays exact in the dtype, for the input ranges.
int64_t exact_limit(cohort_dtype_t dtype) {
  switch (dtype) {
    case COHORT_INT8: return 127;
    case COHORT_UINT8: return 255;
    case COHORT_BFLOAT16: return 256;
    case COHORT_FLOAT16: return 2048;
    default: return 1 << 20;
  }
}

// The value as the dtype holds it: integers wrap (two's complement), floats keep it.
int64_t wrap(cohort_dtype_t dtype, uint64_t value) {
  switch (dtype) {
    case COHORT_INT8: return static_cast<int8_t>(value);
    case COHORT_UINT8: return static_cast<uint8_t>(value);
    case COHORT_INT32: return static_cast<int32_t>(value);
    case COHORT_UINT32: return static_cast<uint32_t>(value);
    default: return static_cast<int64_t>(value);
  }
}

void store(cohort_dtype_t dtype, int64_t value, char *dst) {
  const float f = static_cast<float>(value);
  switch (dtype) {
    case COHORT_INT8:
    case COHORT_UINT8: *dst = static_cast<char>(value); return;
    case COHORT_INT32:
    case COHORT_UINT32: {
      const uint32_t v = static_cast<uint32_t>(value);
      memcpy(dst, &v, sizeof v);
      return;
    }
    case COHORT_FLOAT16: {
      const uint16_t v = coll::float_to_fp16(f);
      memcpy(dst, &v, sizeof v);
      return;
    }
    case COHORT_BFLOAT16: {
      const uint16_t v = coll::float_to_bf16(f);
      memcpy(dst, &v, sizeof v);
      return;
    }
    case COHORT_FLOAT32: memcpy(dst, &f, sizeof f); return;
    case COHORT_FLOAT64: {
      const double d = static_cast<double>(value);
      memcpy(dst, &d, sizeof d);
      return;
    }
    default: memcpy(dst, &value, sizeof value); return;  // int64, uint64
  }
}

// Rank q's input at position k of the period.
int64_t input_value(cohort_dtype_t dtype, cohort_op_t op, int ranks, int q, size_t k) {
  const int64_t per_rank = exact_limit(dtype) / ranks;
  const uint64_t h = mix(static_cast<uint64_t>(q) * Pattern::kPeriod + k);
  switch (op) {
    case COHORT_PROD: {
      const int max_twos = dtype == COHORT_FLOAT16 ? 15 : 62;  // fp16 holds 2^15, int64 2^62
      return q < max_twos ? 1 + static_cast<int64_t>(h & 1) : 1;
    }
    case COHORT_AVG: {
      // a + 1 + d(q): d is +1 on even ranks with an odd partner, -1 on odd ranks, else 0.
      const int64_t range = std::clamp<int64_t>(per_rank - 2, 1, 13);
      const int64_t a = 1 + static_cast<int64_t>(mix(k) % static_cast<uint64_t>(range));
      const int64_t d = q % 2 == 1 ? -1 : (q + 1 < ranks ? 1 : 0);
      return a + 1 + d;
    }
    default: {
      const int64_t range = std::clamp<int64_t>(per_rank, 1, 13);
      return 1 + static_cast<int64_t>(h % static_cast<uint64_t>(range));
    }
  }
}

// The reduction over all ranks at position k, as the dtype holds it.
int64_t reduced_value(cohort_dtype_t dtype, cohort_op_t op, int ranks, size_t k) {
  uint64_t acc = static_cast<uint64_t>(input_value(dtype, op, ranks, 0, k));
  for (int q = 1; q < ranks; ++q) {
    const int64_t v = input_value(dtype, op, ranks, q, k);
    switch (op) {
      case COHORT_PROD: acc *= static_cast<uint64_t>(v); break;
      case COHORT_MIN: acc = std::min<uint64_t>(acc, v); break;
      case COHORT_MAX: acc = std::max<uint64_t>(acc, v); break;
      default: acc += static_cast<uint64_t>(v); break;  // sum, avg
    }
  }
  // Average: the (wrapped) sum divided by the team size, truncated; exact for floats.
  return op == COHORT_AVG ? wrap(dtype, acc) / ranks : wrap(dtype, acc);
}

}  // namespace

Pattern::Pattern(cohort_dtype_t dtype, cohort_op_t op, int ranks)
    : elem_size_(coll::dtype_size(dtype)), inputs_(ranks), reduced_(kPeriod * elem_size_) {
  for (int q = 0; q < ranks; ++q) {
    inputs_[q].resize(kPeriod * elem_size_);
    for (size_t k = 0; k < kPeriod; ++k) {
      store(dtype, input_value(dtype, op, ranks, q, k), inputs_[q].data() + k * elem_size_);
    }
  }
  for (size_t k = 0; k < kPeriod; ++k) {
    store(dtype, reduced_value(dtype, op, ranks, k), reduced_.data() + k * elem_size_);
  }
}

void Pattern::copy_periodic(const std::vector<char> &period, size_t first, size_t count,
                            void *dst) const {
  char *out = static_cast<char *>(dst);
  for (size_t k = first % kPeriod; count > 0; k = 0) {
    const size_t n = std::min(count, kPeriod - k);
    memcpy(out, period.data() + k * elem_size_, n * elem_size_);
    out += n * elem_size_;
    count -= n;
  }
}

void Pattern::input(int rank, size_t first, size_t count, void *dst) const {
  copy_periodic(inputs_[rank], first, count, dst);
}

void Pattern::reduced(size_t first, size_t count, void *dst) const {
  copy_periodic(reduced_, first, count, dst);
}

void expected_output(const Call &call, const Pattern &pattern, void *dst) {
  char *out = static_cast<char *>(dst);
  const size_t count = call.count, block = count * coll::dtype_size(call.dtype);
  const size_t own_first = static_cast<size_t>(call.rank) * count;
  switch (call.collective) {
    case Collective::kAllreduce: pattern.reduced(0, count, out); return;
    case Collective::kReduce:
      if (call.rank == call.root) pattern.reduced(0, count, out);
      return;
    case Collective::kBroadcast: pattern.input(call.root, 0, count, out); return;
    case Collective::kAllgather:
      for (int q = 0; q < call.ranks; ++q) pattern.input(q, 0, count, out + q * block);
      return;
    case Collective::kReduceScatter: pattern.reduced(own_first, count, out); return;
    case Collective::kAlltoall:
      for (int q = 0; q < call.ranks; ++q) pattern.input(q, own_first, count, out + q * block);
      return;
    default: return;
  }
}

void poison(const Region &region, const void *expected, size_t elem_size) {
  const unsigned char *want = static_cast<const unsigned char *>(expected);
  unsigned char *out = reinterpret_cast<unsigned char *>(region.data);
  const size_t bytes = region.count * elem_size;
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(~want[i]);
}

size_t count_wrong(const Region &got, const void *want, size_t elem_size) {
  if (got.count == 0 || memcmp(got.data, want, got.count * elem_size) == 0) return 0;
  const char *expected = static_cast<const char *>(want);
  size_t wrong = 0;
  for (size_t i = 0; i < got.count; ++i) {
    wrong += memcmp(got.data + i * elem_size, expected + i * elem_size, elem_size) != 0;
  }
  return wrong;
}

}  // namespace cohort::perf
