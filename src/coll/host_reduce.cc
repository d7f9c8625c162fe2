#include "coll/host_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/log.h"
#include "coll/dtype.h"
#include "coll/half.h"

namespace cohort::coll {
namespace {

// gcc -O2 vectorises with its "very-cheap" cost model: no runtime alias checks (hence the
// __restrict pointers) and no loop that would need a scalar epilogue, which its estimate
// assumes for any loop of unknown trip count.  So loops run as chunks of a constant kLanes
// elements, whose inner loop vectorises, then a scalar tail.  64 is the most lanes any
// vector has (int8 in AVX-512).
constexpr size_t kLanes = 64;

template <class Step>
inline void for_each_index(size_t n, Step &&step) {
  size_t body = n - n % kLanes;
  for (size_t chunk = 0; chunk < body; chunk += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) step(chunk + j);
  }
  for (size_t i = body; i < n; ++i) step(i);
}

// Elements per block of reduce_multi's accumulator: 4 KiB of fp32, at most 8 KiB, so it
// stays in L1 while every input streams through it.
constexpr size_t kBlock = 1024;

// How a dtype is stored, and the type its arithmetic runs in.
template <class T>
struct Native {
  using Storage = T;
  using Compute = T;
  static T load(T x) { return x; }
  static T store(T x) { return x; }
};

struct Fp16 {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t x) { return fp16_to_float(x); }
  static uint16_t store(float x) { return float_to_fp16(x); }
};

struct Bf16 {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t x) { return bf16_to_float(x); }
  static uint16_t store(float x) { return float_to_bf16(x); }
};

// Integer sum and prod run in the unsigned type, where overflow wraps instead of being
// undefined; converting back to a signed type is modular since C++20.  (uint8 operands
// promote to int, whose range holds any sum or product of two of them.)
template <class T>
struct Wrapping {
  using type = T;
};
template <class T>
requires std::is_integral_v<T>
struct Wrapping<T> {
  using type = std::make_unsigned_t<T>;
};

struct Sum {
  template <class T>
  static T apply(T a, T b) {
    using W = typename Wrapping<T>::type;
    return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
  }
};

struct Prod {
  template <class T>
  static T apply(T a, T b) {
    using W = typename Wrapping<T>::type;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  }
};

// For floats `a != a` is the NaN test: a NaN a is kept, and a NaN b fails `a < b` and is
// taken, so NaN propagates from either side.  Written as selects, so the loop vectorises.
struct Min {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a < b || a != a) ? a : b;
    return b < a ? b : a;
  }
};

struct Max {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a > b || a != a) ? a : b;
    return b > a ? b : a;
  }
};

// The kernels are [[gnu::noinline]]: a call costs nothing next to a loop over a call's or a
// block's elements, whereas inlined into the dispatch gcc 12 vectorised fewer than half of
// them (fp16 among those lost, by -fopt-info-vec-missed).  Standing alone, all but the 64-bit
// integer min/max/prod (SSE2 has no 64-bit compare or multiply) and integer divide vectorise.
template <class Fmt, class Op, class S = typename Fmt::Storage>
[[gnu::noinline]] void into(S *__restrict inout, const S *__restrict in, size_t n) {
  for_each_index(n, [&](size_t i) {
    inout[i] = Fmt::store(Op::apply(Fmt::load(inout[i]), Fmt::load(in[i])));
  });
}

template <class Fmt, class Op, class S = typename Fmt::Storage>
[[gnu::noinline]] void combine(S *__restrict out, const S *__restrict a, const S *__restrict b,
                               size_t n) {
  for_each_index(
      n, [&](size_t i) { out[i] = Fmt::store(Op::apply(Fmt::load(a[i]), Fmt::load(b[i]))); });
}

template <class Fmt, class Op, class S = typename Fmt::Storage, class C = typename Fmt::Compute>
[[gnu::noinline]] void block_first(C *__restrict acc, const S *__restrict a, const S *__restrict b,
                                   size_t n) {
  for_each_index(n, [&](size_t i) { acc[i] = Op::apply(Fmt::load(a[i]), Fmt::load(b[i])); });
}

template <class Fmt, class Op, class S = typename Fmt::Storage, class C = typename Fmt::Compute>
[[gnu::noinline]] void block_add(C *__restrict acc, const S *__restrict in, size_t n) {
  for_each_index(n, [&](size_t i) { acc[i] = Op::apply(acc[i], Fmt::load(in[i])); });
}

template <class Fmt, class S = typename Fmt::Storage, class C = typename Fmt::Compute>
[[gnu::noinline]] void block_store(S *__restrict out, const C *__restrict acc, size_t n) {
  for_each_index(n, [&](size_t i) { out[i] = Fmt::store(acc[i]); });
}

// Three or more inputs, a block at a time: the accumulator holds the running result in the
// compute type, so fp16/bf16 round once, and out (which may be ins[0]) is written only after
// every input of the block was read.
template <class Fmt, class Op, class S = typename Fmt::Storage>
void multi(S *out, const void *const *ins, int nin, size_t count) {
  auto input = [ins](int k) { return static_cast<const S *>(ins[k]); };
  typename Fmt::Compute acc[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = std::min(kBlock, count - base);
    block_first<Fmt, Op>(acc, input(0) + base, input(1) + base, n);
    for (int k = 2; k < nin; ++k) block_add<Fmt, Op>(acc, input(k) + base, n);
    block_store<Fmt>(out + base, acc, n);
  }
}

// Integers divide in 64 bits, where any team size fits, truncating toward zero.
template <class Fmt, class S = typename Fmt::Storage, class C = typename Fmt::Compute>
[[gnu::noinline]] void divide(S *__restrict inout, size_t n, int team_size) {
  if constexpr (std::is_integral_v<C>) {
    using Wide = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
    Wide divisor = static_cast<Wide>(team_size);
    for_each_index(n, [&](size_t i) { inout[i] = static_cast<S>(inout[i] / divisor); });
  } else {
    C divisor = static_cast<C>(team_size);
    for_each_index(n, [&](size_t i) { inout[i] = Fmt::store(Fmt::load(inout[i]) / divisor); });
  }
}

// Calls fn(Format{}) for dtype; false for a value that is not a dtype.
template <class Fn>
bool with_format(cohort_dtype_t dtype, Fn &&fn) {
  switch (dtype) {
    case COHORT_INT8: fn(Native<int8_t>{}); return true;
    case COHORT_UINT8: fn(Native<uint8_t>{}); return true;
    case COHORT_INT32: fn(Native<int32_t>{}); return true;
    case COHORT_UINT32: fn(Native<uint32_t>{}); return true;
    case COHORT_INT64: fn(Native<int64_t>{}); return true;
    case COHORT_UINT64: fn(Native<uint64_t>{}); return true;
    case COHORT_FLOAT16: fn(Fp16{}); return true;
    case COHORT_BFLOAT16: fn(Bf16{}); return true;
    case COHORT_FLOAT32: fn(Native<float>{}); return true;
    case COHORT_FLOAT64: fn(Native<double>{}); return true;
    default: return false;
  }
}

// Calls fn(Format{}, Op{}) with AVG as SUM; false for an invalid dtype or op.
template <class Fn>
bool with_format_and_op(cohort_dtype_t dtype, cohort_op_t op, Fn &&fn) {
  switch (op) {
    case COHORT_SUM:
    case COHORT_AVG: return with_format(dtype, [&](auto fmt) { fn(fmt, Sum{}); });
    case COHORT_PROD: return with_format(dtype, [&](auto fmt) { fn(fmt, Prod{}); });
    case COHORT_MIN: return with_format(dtype, [&](auto fmt) { fn(fmt, Min{}); });
    case COHORT_MAX: return with_format(dtype, [&](auto fmt) { fn(fmt, Max{}); });
    default: return false;
  }
}

// Callers validate at the API, so an invalid value here is a Cohort bug: say so, touch nothing.
// `arg` names a further int argument that must be >= 1 (nin, team_size).
bool check_valid(const char *what, cohort_dtype_t dtype, cohort_op_t op, const char *arg,
                 int value) {
  if (coll::op_supported(dtype, op) && value >= 1) return true;
  COHORT_LOG_WARN(COLL, "%s: dtype=%d op=%d %s=%d invalid; buffer left unchanged", what,
                  static_cast<int>(dtype), static_cast<int>(op), arg, value);
  return false;
}

}  // namespace

void reduce_into(void *inout, const void *in, size_t count, cohort_dtype_t dtype, cohort_op_t op) {
  if (count == 0 || !check_valid("reduce_into", dtype, op, "nin", 2)) return;
  with_format_and_op(dtype, op, [&](auto fmt, auto fn) {
    using Fmt = decltype(fmt);
    using S = typename Fmt::Storage;
    into<Fmt, decltype(fn)>(static_cast<S *>(inout), static_cast<const S *>(in), count);
  });
}

void reduce_multi(void *out, const void *const *ins, int nin, size_t count, cohort_dtype_t dtype,
                  cohort_op_t op) {
  if (count == 0 || !check_valid("reduce_multi", dtype, op, "nin", nin)) return;
  if (nin == 1) {
    if (out != ins[0]) std::memcpy(out, ins[0], count * coll::dtype_size(dtype));
    return;
  }
  if (nin == 2 && out == ins[0]) return reduce_into(out, ins[1], count, dtype, op);
  with_format_and_op(dtype, op, [&](auto fmt, auto fn) {
    using Fmt = decltype(fmt);
    using Op = decltype(fn);
    using S = typename Fmt::Storage;
    auto *dst = static_cast<S *>(out);
    if (nin == 2) {
      combine<Fmt, Op>(dst, static_cast<const S *>(ins[0]), static_cast<const S *>(ins[1]), count);
    } else {
      multi<Fmt, Op>(dst, ins, nin, count);
    }
  });
}

void finalize_avg(void *inout, size_t count, cohort_dtype_t dtype, int team_size) {
  if (count == 0 || !check_valid("finalize_avg", dtype, COHORT_AVG, "team_size", team_size)) return;
  if (team_size == 1) return;  // x / 1 == x
  with_format(dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    divide<Fmt>(static_cast<typename Fmt::Storage *>(inout), count, team_size);
  });
}

}  // namespace cohort::coll
