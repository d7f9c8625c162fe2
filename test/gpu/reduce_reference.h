// The host reference of the kernel tests (kernel_test, kernel_emul_test, team_emul_test): a
// reduction computed as the host path computes it (src/coll/host_reduce.cc), and the inputs that
// exercise it.  Header-only, with no Cohort library behind it: the tests link the kernels
// alone.
//
// reference() follows the host path's semantics: the same fp16/bf16 conversions
// (coll/half.h), integers wrapping in their own type, floating-point inputs combined left to
// right in the compute type (fp32 for fp16/bf16) and rounded once, kAvg dividing the stored sum
// as finalize_avg.  So a kernel's output must match it bit for bit (two NaNs match whatever
// their payloads: is_nan).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

#include "kernels/types.h"
#include "coll/half.h"

namespace cohort::kernel_test {

using cohort::kernels::DType;
using cohort::kernels::RedOp;

inline const char *const kDtypeNames[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                          "uint64", "fp16",  "bf16",  "fp32",   "fp64"};
inline const char *const kOpNames[] = {"sum", "prod", "min", "max", "avg"};

// ------------------------------------------------------------------ host reference

template <class T>
struct NativeRef {
  using S = T;
  using C = T;
  static T widen(T x) { return x; }
  static T narrow(T x) { return x; }
};
struct Fp16Ref {
  using S = uint16_t;
  using C = float;
  static float widen(uint16_t x) { return cohort::coll::fp16_to_float(x); }
  static uint16_t narrow(float x) { return cohort::coll::float_to_fp16(x); }
};
struct Bf16Ref {
  using S = uint16_t;
  using C = float;
  static float widen(uint16_t x) { return cohort::coll::bf16_to_float(x); }
  static uint16_t narrow(float x) { return cohort::coll::float_to_bf16(x); }
};

template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <class T>
T apply(RedOp op, T a, T b) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg: return wrap_add(a, b);
    case RedOp::kProd: return wrap_mul(a, b);
    case RedOp::kMin:
      if constexpr (std::is_floating_point_v<T>)
        return (a < b || a != a) ? a : b;
      else
        return b < a ? b : a;
    case RedOp::kMax:
      if constexpr (std::is_floating_point_v<T>)
        return (a > b || a != a) ? a : b;
      else
        return b > a ? b : a;
  }
  return a;
}

// finalize_avg's division: integers in 64 bits truncating toward zero, floats in the compute
// type (fp16/bf16 widened from the stored sum and rounded again).
template <class Ref>
typename Ref::S divide(typename Ref::S stored, int divisor) {
  using C = typename Ref::C;
  if constexpr (std::is_integral_v<C>) {
    using Wide = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
    return static_cast<typename Ref::S>(static_cast<Wide>(stored) / static_cast<Wide>(divisor));
  } else {
    return Ref::narrow(Ref::widen(stored) / static_cast<C>(divisor));
  }
}

template <class Ref>
void reference(void *out, const void *const *ins, int nins, size_t count, RedOp op, int divisor) {
  using S = typename Ref::S;
  using C = typename Ref::C;
  if (nins == 1 && op != RedOp::kAvg) {  // the host path copies: bytes as they are
    if (count > 0) std::memcpy(out, ins[0], count * sizeof(S));  // count 0 may pass nulls
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    S raw;
    std::memcpy(&raw, static_cast<const char *>(ins[0]) + i * sizeof(S), sizeof(S));
    C acc = Ref::widen(raw);
    for (int k = 1; k < nins; ++k) {
      std::memcpy(&raw, static_cast<const char *>(ins[k]) + i * sizeof(S), sizeof(S));
      acc = apply(op, acc, Ref::widen(raw));
    }
    S stored = Ref::narrow(acc);
    if (op == RedOp::kAvg && divisor > 1) stored = divide<Ref>(stored, divisor);
    std::memcpy(static_cast<char *>(out) + i * sizeof(S), &stored, sizeof(S));
  }
}

template <class Fn>
void with_ref(DType dtype, Fn &&fn) {
  switch (dtype) {
    case DType::kInt8: fn(NativeRef<int8_t>{}); break;
    case DType::kUint8: fn(NativeRef<uint8_t>{}); break;
    case DType::kInt32: fn(NativeRef<int32_t>{}); break;
    case DType::kUint32: fn(NativeRef<uint32_t>{}); break;
    case DType::kInt64: fn(NativeRef<int64_t>{}); break;
    case DType::kUint64: fn(NativeRef<uint64_t>{}); break;
    case DType::kFloat16: fn(Fp16Ref{}); break;
    case DType::kBfloat16: fn(Bf16Ref{}); break;
    case DType::kFloat32: fn(NativeRef<float>{}); break;
    case DType::kFloat64: fn(NativeRef<double>{}); break;
  }
}

inline bool is_float(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBfloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

inline bool is_nan(DType dtype, const unsigned char *p) {
  switch (dtype) {
    case DType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7fffu) > 0x7c00u;
    }
    case DType::kBfloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return (b & 0x7fffu) > 0x7f80u;
    }
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case DType::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
    default: return false;
  }
}

// ------------------------------------------------------------------ inputs

// Random values: integers of every bit pattern (sums and products wrap); floating-point
// values with a random sign, mantissa and an exponent in [-10, 10] (so products of 8 stay
// finite in fp16), and one element in 29 a special value (each input its own).
inline void fill_inputs(DType dtype, std::mt19937_64 &rng, unsigned char *out, size_t count) {
  const size_t size = cohort::kernels::dtype_size(dtype);
  if (!is_float(dtype)) {
    for (size_t i = 0; i < count * size; i += 8) {
      uint64_t bits = rng();
      std::memcpy(out + i, &bits, std::min<size_t>(8, count * size - i));
    }
    return;
  }
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-10, 10);
  for (size_t i = 0; i < count; ++i) {
    double v = std::ldexp(mantissa(rng), exponent(rng)) * ((rng() & 1) ? -1.0 : 1.0);
    int special = rng() % 29 == 0 ? static_cast<int>(rng() % 7) : -1;
    unsigned char *p = out + i * size;
    if (dtype == DType::kFloat16 || dtype == DType::kBfloat16) {
      static const uint16_t kFp16Special[] = {0x7e00, 0x7c00, 0xfc00, 0x0000,
                                              0x8000, 0x0001, 0x7bff};
      static const uint16_t kBf16Special[] = {0x7fc0, 0x7f80, 0xff80, 0x0000,
                                              0x8000, 0x0001, 0x7f7f};
      uint16_t h = dtype == DType::kFloat16 ? cohort::coll::float_to_fp16(static_cast<float>(v))
                                            : cohort::coll::float_to_bf16(static_cast<float>(v));
      if (special >= 0)
        h = dtype == DType::kFloat16 ? kFp16Special[special] : kBf16Special[special];
      std::memcpy(p, &h, 2);
    } else if (dtype == DType::kFloat32) {
      using L = std::numeric_limits<float>;
      const float kSpecial[] = {L::quiet_NaN(), L::infinity(),   -L::infinity(), 0.0f,
                                -0.0f,          L::denorm_min(), L::max()};
      float f = special >= 0 ? kSpecial[special] : static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else {
      using L = std::numeric_limits<double>;
      const double kSpecial[] = {L::quiet_NaN(), L::infinity(),   -L::infinity(), 0.0,
                                 -0.0,           L::denorm_min(), L::max()};
      double d = special >= 0 ? kSpecial[special] : v;
      std::memcpy(p, &d, 8);
    }
  }
}

}  // namespace cohort::kernel_test
