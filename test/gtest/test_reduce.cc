// Unit tests for element types, fp16/bf16 conversion and the CPU reductions
// (src/tl_host/dtype.*, half.h, reduce.*).
//
// The reductions are checked against a scalar reference written here: integers in their own
// type with the documented wrap-around, floating-point values accumulated in double and
// rounded once.  Floating-point inputs are +-{1, 1.5} * 2^e with |e| <= 6, so every sum and
// product of up to 8 of them is exact in fp32 (at most 16 significant bits); the only rounding
// left is the final one, to fp16/bf16, which the reference performs from the same exact value.
// Every comparison is therefore bit-exact.  Where inputs are not exact (ReduceRandom), the
// tolerance is the textbook bound of recursive summation and is stated there.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cohort.h"
#include "core/status.h"
#include "coll/dtype.h"
#include "coll/half.h"
#include "coll/host_reduce.h"

namespace cohort::tl_host {
namespace {

using namespace coll;  // dtypes and ops

const cohort_dtype_t kAllDtypes[] = {COHORT_INT8,    COHORT_UINT8,  COHORT_INT32,   COHORT_UINT32,
                                     COHORT_INT64,   COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16,
                                     COHORT_FLOAT32, COHORT_FLOAT64};

const cohort_op_t kAllOps[] = {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG};

// ------------------------------------------------------------------- dtype names

TEST(DtypeNames, SizesAndNames) {
  struct {
    cohort_dtype_t dtype;
    size_t size;
    const char *name;
    bool is_float;
  } expected[] = {
      {COHORT_INT8, 1, "int8", false},   {COHORT_UINT8, 1, "uint8", false},
      {COHORT_INT32, 4, "int32", false}, {COHORT_UINT32, 4, "uint32", false},
      {COHORT_INT64, 8, "int64", false}, {COHORT_UINT64, 8, "uint64", false},
      {COHORT_FLOAT16, 2, "fp16", true}, {COHORT_BFLOAT16, 2, "bf16", true},
      {COHORT_FLOAT32, 4, "fp32", true}, {COHORT_FLOAT64, 8, "fp64", true},
  };
  ASSERT_EQ(std::size(expected), static_cast<size_t>(COHORT_NUM_DTYPES));
  for (const auto &e : expected) {
    EXPECT_EQ(dtype_size(e.dtype), e.size) << e.name;
    EXPECT_STREQ(dtype_name(e.dtype), e.name);
    EXPECT_EQ(dtype_is_float(e.dtype), e.is_float) << e.name;
  }
}

TEST(DtypeNames, ParseRoundTripsEveryNameInAnyCase) {
  for (cohort_dtype_t dtype : kAllDtypes) {
    std::string name = dtype_name(dtype);
    EXPECT_EQ(parse_dtype(name), dtype) << name;
    std::string upper = name;
    for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(parse_dtype(upper), dtype) << upper;
  }
}

TEST(DtypeNames, AliasesParse) {
  EXPECT_EQ(parse_dtype("float"), COHORT_FLOAT32);
  EXPECT_EQ(parse_dtype("Float"), COHORT_FLOAT32);
  EXPECT_EQ(parse_dtype("half"), COHORT_FLOAT16);
  EXPECT_EQ(parse_dtype("BFLOAT16"), COHORT_BFLOAT16);
  EXPECT_EQ(parse_dtype("double"), COHORT_FLOAT64);
  EXPECT_EQ(parse_dtype("int"), COHORT_INT32);
}

TEST(DtypeNames, BadNamesRejected) {
  for (const char *bad : {"", "int16", "fp8", "float128", " fp32", "fp32 ", "fp3", "fp322",
                          "invalid", "uint", "sum"}) {
    EXPECT_EQ(parse_dtype(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(DtypeNames, ValueOutsideTheEnumHasNoSizeOrName) {
  auto bad = static_cast<cohort_dtype_t>(COHORT_NUM_DTYPES);
  EXPECT_EQ(dtype_size(bad), 0u);
  EXPECT_STREQ(dtype_name(bad), "invalid");
  EXPECT_FALSE(dtype_is_float(bad));
  EXPECT_STREQ(op_name(static_cast<cohort_op_t>(COHORT_NUM_OPS)), "invalid");
}

TEST(DtypeOps, NamesRoundTrip) {
  const char *names[] = {"sum", "prod", "min", "max", "avg"};
  for (int i = 0; i < COHORT_NUM_OPS; ++i) {
    auto op = static_cast<cohort_op_t>(i);
    EXPECT_STREQ(op_name(op), names[i]);
    EXPECT_EQ(parse_op(names[i]), op);
  }
  EXPECT_EQ(parse_op("MAX"), COHORT_MAX);
  EXPECT_EQ(parse_op("Avg"), COHORT_AVG);
}

TEST(DtypeOps, BadNamesRejected) {
  for (const char *bad : {"", "add", "mean", "product", "su", "summ", " sum", "fp32"}) {
    EXPECT_EQ(parse_op(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(DtypeOps, EveryOpSupportedForEveryDtype) {
  for (cohort_dtype_t dtype : kAllDtypes) {
    for (cohort_op_t op : kAllOps) EXPECT_TRUE(op_supported(dtype, op)) << dtype << " " << op;
  }
  EXPECT_FALSE(op_supported(static_cast<cohort_dtype_t>(COHORT_NUM_DTYPES), COHORT_SUM));
  EXPECT_FALSE(op_supported(COHORT_INT8, static_cast<cohort_op_t>(COHORT_NUM_OPS)));
}

TEST(DtypeCheck, OutOfRangeValuesNamedInLastError) {
  clear_last_error();
  EXPECT_EQ(check_dtype(12), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "dtype=12 is not a cohort_dtype_t");
  EXPECT_EQ(check_dtype(-1), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "dtype=-1 is not a cohort_dtype_t");
  EXPECT_EQ(check_dtype(COHORT_NUM_DTYPES), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(check_op(5), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "op=5 is not a cohort_op_t");
  EXPECT_EQ(check_op(-3), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(check_reduction(COHORT_FLOAT32, 9), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "op=9 is not a cohort_op_t");
  EXPECT_EQ(check_reduction(99, COHORT_SUM), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "dtype=99 is not a cohort_dtype_t");
}

TEST(DtypeCheck, EveryValidPairPasses) {
  clear_last_error();
  for (cohort_dtype_t dtype : kAllDtypes) {
    EXPECT_EQ(check_dtype(dtype), COHORT_SUCCESS);
    for (cohort_op_t op : kAllOps) {
      EXPECT_EQ(check_op(op), COHORT_SUCCESS);
      EXPECT_EQ(check_reduction(dtype, op), COHORT_SUCCESS);
    }
  }
  EXPECT_EQ(last_error(), "");
}

// ---------------------------------------------------------- reference formats

// Value of every bit pattern of a 16-bit format, decoded from its fields the textbook way.
struct HalfFormat {
  uint16_t inf;          // pattern of +Inf
  uint16_t quiet;        // quiet bit of a NaN
  double overflow_step;  // where Inf would sit were it finite: 2^(emax + 1)
  std::vector<double> value;
};

HalfFormat make_format(int mantissa_bits, int exponent_bits) {
  int bias = (1 << (exponent_bits - 1)) - 1;
  int max_exponent = (1 << exponent_bits) - 1;
  HalfFormat f;
  f.inf = static_cast<uint16_t>(max_exponent << mantissa_bits);
  f.quiet = static_cast<uint16_t>(1 << (mantissa_bits - 1));
  f.overflow_step = std::ldexp(1.0, bias + 1);
  f.value.resize(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    int exponent = static_cast<int>(bits >> mantissa_bits) & max_exponent;
    int mantissa = static_cast<int>(bits) & ((1 << mantissa_bits) - 1);
    double magnitude;
    if (exponent == max_exponent) {
      magnitude = mantissa != 0 ? std::nan("") : HUGE_VAL;
    } else if (exponent == 0) {
      magnitude = std::ldexp(mantissa, 1 - bias - mantissa_bits);
    } else {
      magnitude = std::ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits);
    }
    f.value[bits] = (bits & 0x8000) != 0 ? -magnitude : magnitude;
  }
  return f;
}

const HalfFormat &fp16_format() {
  static const HalfFormat f = make_format(10, 5);
  return f;
}

const HalfFormat &bf16_format() {
  static const HalfFormat f = make_format(7, 8);
  return f;
}

// The pattern nearest to v, ties to the even pattern, by binary search over the positive
// patterns.  Inf takes part as the step after the largest finite value, so overflow rounds
// like any other value.  NaN gives the quiet NaN.
uint16_t round_to_half(double v, const HalfFormat &f) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | f.inf | f.quiet);
  double a = std::fabs(v);
  if (a >= f.overflow_step) return static_cast<uint16_t>(sign | f.inf);
  uint32_t lo = 0, hi = f.inf;  // value[lo] <= a < value of hi
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    (f.value[mid] <= a ? lo : hi) = mid;
  }
  double hi_value = hi == f.inf ? f.overflow_step : f.value[hi];
  double twice = 2 * a, midpoint = f.value[lo] + hi_value;  // both exact
  uint32_t code = twice < midpoint ? lo : twice > midpoint ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<uint16_t>(sign | code);
}

bool is_half_nan(uint16_t bits, const HalfFormat &f) {
  return (bits & f.inf) == f.inf && (bits & (f.inf - 1) & ~f.inf) != 0;
}

// ------------------------------------------------------------ fp16 and bf16

// Widening gives the pattern's exact value; narrowing that value gives the pattern back.  A
// NaN keeps its sign and payload and comes back quiet.
void check_every_pattern(float (*widen)(uint16_t), uint16_t (*narrow)(float), const HalfFormat &f) {
  int failures = 0;
  for (uint32_t i = 0; i < 65536 && failures < 10; ++i) {
    auto bits = static_cast<uint16_t>(i);
    float wide = widen(bits);
    uint16_t back = narrow(wide);
    double expected = f.value[bits];
    bool ok;
    if (std::isnan(expected)) {
      ok = std::isnan(wide) && std::signbit(wide) == ((bits & 0x8000) != 0) &&
           back == (bits | f.quiet);
    } else {
      ok = static_cast<double>(wide) == expected && std::signbit(wide) == std::signbit(expected) &&
           back == bits;
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << std::hex << "pattern 0x" << bits << " widened to " << wide << " (0x"
                    << std::bit_cast<uint32_t>(wide) << "), back 0x" << back;
    }
  }
}

TEST(HalfFp16, EveryBitPatternWidensExactlyAndRoundTrips) {
  check_every_pattern(fp16_to_float, float_to_fp16, fp16_format());
}

TEST(HalfBf16, EveryBitPatternWidensExactlyAndRoundTrips) {
  check_every_pattern(bf16_to_float, float_to_bf16, bf16_format());
}

struct Narrowing {
  float in;
  uint16_t out;
};

TEST(HalfFp16, RoundsToNearestEvenAtBoundaries) {
  const Narrowing cases[] = {
      {1.0f + 0x1p-11f, 0x3c00},             // halfway 1 and 1+2^-10: the even one is 1
      {1.0f + 3 * 0x1p-11f, 0x3c02},         // halfway 1+2^-10 and 1+2^-9: the upper is even
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01},  // just above halfway
      {1.0f + 0x1p-11f - 0x1p-20f, 0x3c00},  // just below
      {2049.0f, 0x6800},                     // ulp 2: halfway 2048 and 2050
      {2051.0f, 0x6802},                     // halfway 2050 and 2052
      {-2049.0f, 0xe800},
      {65504.0f, 0x7bff},  // largest finite
      {65519.0f, 0x7bff},  // below halfway to 2^16
      {65520.0f, 0x7c00},  // halfway: the even neighbour is Inf
      {-65520.0f, 0xfc00},
      {1e10f, 0x7c00},
      {FLT_MAX, 0x7c00},
      {HUGE_VALF, 0x7c00},
      {-HUGE_VALF, 0xfc00},
      {0x1p-14f, 0x0400},            // smallest normal
      {1023.5f * 0x1p-24f, 0x0400},  // halfway largest subnormal and smallest normal
      {1022.5f * 0x1p-24f, 0x03fe},  // halfway 0x3fe and 0x3ff: even
      {0x1p-24f, 0x0001},            // smallest subnormal
      {0x1p-25f, 0x0000},            // halfway 0 and 2^-24: zero is even
      {0x1p-25f + 0x1p-40f, 0x0001},
      {3 * 0x1p-25f, 0x0002},  // halfway 1 and 2 subnormal steps
      {5 * 0x1p-25f, 0x0002},  // halfway 2 and 3
      {0x1p-26f, 0x0000},      // underflow to zero
      {-0x1p-26f, 0x8000},     // keeps the sign
      {FLT_MIN, 0x0000},
      {FLT_TRUE_MIN, 0x0000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
  };
  for (const Narrowing &c : cases) {
    EXPECT_EQ(float_to_fp16(c.in), c.out) << std::hexfloat << c.in;
  }
}

TEST(HalfBf16, RoundsToNearestEvenAtBoundaries) {
  const Narrowing cases[] = {
      {1.0f + 0x1p-8f, 0x3f80},             // halfway 1 and 1+2^-7: even is 1
      {1.0f + 3 * 0x1p-8f, 0x3f82},         // halfway, upper is even
      {1.0f + 0x1p-8f + 0x1p-23f, 0x3f81},  // just above halfway
      {257.0f, 0x4380},                     // ulp 2 at 256: 257 is halfway, 256 even
      {259.0f, 0x4382},
      {FLT_MAX, 0x7f80},                            // above halfway to 2^128: Inf
      {std::bit_cast<float>(0x7f7f7fffu), 0x7f7f},  // just below halfway: largest finite
      {std::bit_cast<float>(0x7f7f8000u), 0x7f80},  // halfway, odd below: Inf
      {-FLT_MAX, 0xff80},
      {HUGE_VALF, 0x7f80},
      {std::bit_cast<float>(0x00008000u), 0x0000},  // subnormal halfway 0 and 1: zero
      {std::bit_cast<float>(0x00018000u), 0x0002},  // halfway 1 and 2: even
      {std::bit_cast<float>(0x00008001u), 0x0001},
      {std::bit_cast<float>(0x80008000u), 0x8000},
      {FLT_MIN, 0x0080},
      {-0.0f, 0x8000},
  };
  for (const Narrowing &c : cases) {
    EXPECT_EQ(float_to_bf16(c.in), c.out) << std::hexfloat << c.in;
  }
}

TEST(HalfFp16, NanStaysNanWhateverItsPayload) {
  // A payload only in the 13 bits narrowing drops must not become Inf.
  for (uint32_t bits : {0x7f800001u, 0x7fc00000u, 0xffc00000u, 0x7fbfffffu, 0xff800001u}) {
    uint16_t half = float_to_fp16(std::bit_cast<float>(bits));
    EXPECT_TRUE(is_half_nan(half, fp16_format())) << std::hex << bits << " -> " << half;
    EXPECT_EQ((half & 0x8000) != 0, (bits >> 31) != 0);
    half = float_to_bf16(std::bit_cast<float>(bits));
    EXPECT_TRUE(is_half_nan(half, bf16_format())) << std::hex << bits << " -> " << half;
  }
}

// Narrowing against the search-based reference: floats around every midpoint between
// neighbouring patterns (where rounding decides), then a stride through all float patterns.
void check_narrowing(uint16_t (*narrow)(float), const HalfFormat &f) {
  std::vector<float> probes;
  for (uint32_t code = 0; code < f.inf; ++code) {
    double next = code + 1 == f.inf ? f.overflow_step : f.value[code + 1];
    auto mid = static_cast<float>((f.value[code] + next) / 2);  // exact in float
    probes.insert(probes.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, HUGE_VALF)});
  }
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4093) {
    probes.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  int failures = 0;
  for (float in : probes) {
    for (float x : {in, -in}) {
      uint16_t got = narrow(x);
      bool ok = std::isnan(x) ? is_half_nan(got, f) : got == round_to_half(x, f);
      if (!ok && ++failures <= 10) {
        ADD_FAILURE() << std::hexfloat << x << " -> 0x" << std::hex << got << ", expected 0x"
                      << round_to_half(x, f);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(HalfFp16, NarrowingMatchesReferenceRounding) { check_narrowing(float_to_fp16, fp16_format()); }

TEST(HalfBf16, NarrowingMatchesReferenceRounding) { check_narrowing(float_to_bf16, bf16_format()); }

// ------------------------------------------------------------ reference reductions

// What the reference knows of a dtype: its storage, and for floating-point ones the exact
// value of an element and the rounding of a double to the storage format.
template <class T>
struct IntRef {
  using Storage = T;
  static constexpr bool kInteger = true;
};

template <class T>
struct FloatRef {
  using Storage = T;
  static constexpr bool kInteger = false;
  static double decode(T x) { return x; }
  static T encode(double v) { return static_cast<T>(v); }
};

template <const HalfFormat &(*Format)()>
struct HalfRef {
  using Storage = uint16_t;
  static constexpr bool kInteger = false;
  static double decode(uint16_t x) { return Format().value[x]; }
  static uint16_t encode(double v) { return round_to_half(v, Format()); }
};

using Fp16Ref = HalfRef<fp16_format>;
using Bf16Ref = HalfRef<bf16_format>;

// Integers wrap modulo 2^64, then truncate to the type's width: modulo 2^bits as documented.
template <class T>
T ref_apply_int(cohort_op_t op, T a, T b) {
  auto wa = static_cast<uint64_t>(a), wb = static_cast<uint64_t>(b);
  switch (op) {
    case COHORT_PROD: return static_cast<T>(wa * wb);
    case COHORT_MIN: return std::min(a, b);
    case COHORT_MAX: return std::max(a, b);
    default: return static_cast<T>(wa + wb);  // sum, avg
  }
}

double ref_apply_float(cohort_op_t op, double a, double b) {
  if ((op == COHORT_MIN || op == COHORT_MAX) && (std::isnan(a) || std::isnan(b))) return NAN;
  switch (op) {
    case COHORT_PROD: return a * b;
    case COHORT_MIN: return std::min(a, b);
    case COHORT_MAX: return std::max(a, b);
    default: return a + b;  // sum, avg
  }
}

template <class R, class T = typename R::Storage>
T ref_reduce(const std::vector<const T *> &ins, int nin, size_t i, cohort_op_t op) {
  if constexpr (R::kInteger) {
    T acc = ins[0][i];
    for (int k = 1; k < nin; ++k) acc = ref_apply_int(op, acc, ins[k][i]);
    return acc;
  } else {
    double acc = R::decode(ins[0][i]);
    for (int k = 1; k < nin; ++k) acc = ref_apply_float(op, acc, R::decode(ins[k][i]));
    return R::encode(acc);
  }
}

// Random integers over the whole range (so sums and products wrap); floating-point values
// +-{1, 1.5} * 2^e, |e| <= 6, whose sums and products of 8 are exact in fp32.
template <class R, class T = typename R::Storage>
std::vector<T> random_elements(size_t n, std::mt19937_64 &rng) {
  std::vector<T> out(n);
  for (T &x : out) {
    uint64_t r = rng();
    if constexpr (R::kInteger) {
      x = static_cast<T>(r);
    } else {
      double v = std::ldexp((r & 1) != 0 ? 1.5 : 1.0, static_cast<int>((r >> 1) % 13) - 6);
      x = R::encode((r & 0x100) != 0 ? -v : v);
    }
  }
  return out;
}

template <class T>
std::string element_string(T x) {
  if constexpr (std::is_integral_v<T>) return std::to_string(+x);
  return std::to_string(static_cast<double>(x));
}

// The first element where got differs in bits from expected, or "" if none.
template <class T>
std::string first_difference(const T *expected, const T *got, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&expected[i], &got[i], sizeof(T)) != 0) {
      return "element " + std::to_string(i) + ": expected " + element_string(expected[i]) +
             ", got " + element_string(got[i]);
    }
  }
  return "";
}

constexpr size_t kCounts[] = {0, 1, 7, 1023, 65537};
constexpr size_t kMaxCount = 65537;
constexpr int kNins[] = {1, 2, 3, 8};

// A buffer of count elements starting one element past an allocation (so not vector
// aligned), with a guard element on each side.
template <class T>
struct Guarded {
  std::vector<T> storage;
  explicit Guarded(size_t count) : storage(count + 2) {
    std::memset(storage.data(), 0xa5, storage.size() * sizeof(T));
  }
  T *data() { return storage.data() + 1; }
  bool guards_intact() const {
    const auto *front = reinterpret_cast<const unsigned char *>(storage.data());
    const auto *back = reinterpret_cast<const unsigned char *>(&storage.back());
    for (size_t b = 0; b < sizeof(T); ++b) {
      if (front[b] != 0xa5 || back[b] != 0xa5) return false;
    }
    return true;
  }
};

// Out of place, in place (out == ins[0]) and, for two inputs, reduce_into: each against the
// reference, for every count.  Input k starts 1 + k % 2 elements into its allocation.
template <class R, class T = typename R::Storage>
void check_all_counts(cohort_dtype_t dtype, cohort_op_t op, int nin,
                      const std::vector<std::vector<T>> &inputs) {
  std::vector<const T *> ins;
  std::vector<const void *> ins_void;
  for (int k = 0; k < nin; ++k) {
    ins.push_back(inputs[k].data() + 1 + k % 2);
    ins_void.push_back(ins.back());
  }
  std::vector<T> expected(kMaxCount);
  for (size_t i = 0; i < kMaxCount; ++i) expected[i] = ref_reduce<R>(ins, nin, i, op);

  for (size_t count : kCounts) {
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + op_name(op) +
                 " nin=" + std::to_string(nin) + " count=" + std::to_string(count));
    Guarded<T> out(count);
    reduce_multi(out.data(), ins_void.data(), nin, count, dtype, op);
    EXPECT_EQ(first_difference(expected.data(), out.data(), count), "") << "out of place";
    EXPECT_TRUE(out.guards_intact()) << "out of place";

    Guarded<T> in_place(count);
    std::copy(ins[0], ins[0] + count, in_place.data());
    std::vector<const void *> aliased = ins_void;
    aliased[0] = in_place.data();
    reduce_multi(in_place.data(), aliased.data(), nin, count, dtype, op);
    EXPECT_EQ(first_difference(expected.data(), in_place.data(), count), "") << "in place";
    EXPECT_TRUE(in_place.guards_intact()) << "in place";

    if (nin == 2) {
      Guarded<T> inout(count);
      std::copy(ins[0], ins[0] + count, inout.data());
      reduce_into(inout.data(), ins[1], count, dtype, op);
      EXPECT_EQ(first_difference(expected.data(), inout.data(), count), "") << "reduce_into";
      EXPECT_TRUE(inout.guards_intact()) << "reduce_into";
    }
  }
}

template <class R, class T = typename R::Storage>
void check_dtype_sweep(cohort_dtype_t dtype) {
  std::mt19937_64 rng(1234 + dtype);
  std::vector<std::vector<T>> inputs;
  for (int k = 0; k < 8; ++k) inputs.push_back(random_elements<R>(kMaxCount + 2, rng));
  for (cohort_op_t op : kAllOps) {
    for (int nin : kNins) check_all_counts<R>(dtype, op, nin, inputs);
  }
}

// Runs fn.template operator()<Ref>() with the reference type of dtype.
template <class Fn>
void with_ref(cohort_dtype_t dtype, Fn &&fn) {
  switch (dtype) {
    case COHORT_INT8: return fn.template operator()<IntRef<int8_t>>();
    case COHORT_UINT8: return fn.template operator()<IntRef<uint8_t>>();
    case COHORT_INT32: return fn.template operator()<IntRef<int32_t>>();
    case COHORT_UINT32: return fn.template operator()<IntRef<uint32_t>>();
    case COHORT_INT64: return fn.template operator()<IntRef<int64_t>>();
    case COHORT_UINT64: return fn.template operator()<IntRef<uint64_t>>();
    case COHORT_FLOAT16: return fn.template operator()<Fp16Ref>();
    case COHORT_BFLOAT16: return fn.template operator()<Bf16Ref>();
    case COHORT_FLOAT32: return fn.template operator()<FloatRef<float>>();
    case COHORT_FLOAT64: return fn.template operator()<FloatRef<double>>();
    default: FAIL() << "no reference for dtype " << dtype;
  }
}

// ------------------------------------------------------------ reductions

class ReduceSweep : public ::testing::TestWithParam<cohort_dtype_t> {};

TEST_P(ReduceSweep, EveryOpNinAndCountMatchesScalarReference) {
  cohort_dtype_t dtype = GetParam();
  with_ref(dtype, [dtype]<class R>() { check_dtype_sweep<R>(dtype); });
}

template <class R, class T = typename R::Storage>
void check_finalize(cohort_dtype_t dtype) {
  std::mt19937_64 rng(99 + dtype);
  for (int team_size : {1, 3, 7, 200}) {
    std::vector<T> data = random_elements<R>(1023, rng);
    std::vector<T> expected(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      if constexpr (R::kInteger) {
        // Division in the type's own signedness truncates toward zero.
        using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        expected[i] = static_cast<T>(static_cast<Wide>(data[i]) / static_cast<Wide>(team_size));
      } else {
        // One rounding from double.  The library divides in fp32 (fp64 for fp64) and rounds
        // again to fp16/bf16; with 24 >= 2 * 11 + 2 bits that double rounding of a quotient
        // equals one rounding, so the results agree bit for bit.
        expected[i] = R::encode(R::decode(data[i]) / team_size);
      }
    }
    finalize_avg(data.data(), data.size(), dtype, team_size);
    EXPECT_EQ(first_difference(expected.data(), data.data(), data.size()), "")
        << dtype_name(dtype) << " team_size=" << team_size;
  }
}

TEST_P(ReduceSweep, FinalizeAvgMatchesScalarReference) {
  cohort_dtype_t dtype = GetParam();
  with_ref(dtype, [dtype]<class R>() { check_finalize<R>(dtype); });
}

INSTANTIATE_TEST_SUITE_P(ReduceEveryDtype, ReduceSweep, ::testing::ValuesIn(kAllDtypes),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

TEST(ReduceFinalizeAvg, IntegersTruncateTowardZero) {
  std::vector<int32_t> i32 = {7, -7, 5, -5, 0, INT32_MIN, INT32_MAX};
  finalize_avg(i32.data(), i32.size(), COHORT_INT32, 2);
  EXPECT_EQ(i32, (std::vector<int32_t>{3, -3, 2, -2, 0, -1073741824, 1073741823}));
  std::vector<int8_t> i8 = {-128, 127, -1, 2};
  finalize_avg(i8.data(), i8.size(), COHORT_INT8, 3);
  EXPECT_EQ(i8, (std::vector<int8_t>{-42, 42, 0, 0}));
  std::vector<int8_t> big_team = {-128, 127};  // a team size beyond int8's range
  finalize_avg(big_team.data(), big_team.size(), COHORT_INT8, 100);
  EXPECT_EQ(big_team, (std::vector<int8_t>{-1, 1}));
  std::vector<uint8_t> u8 = {255, 2};
  finalize_avg(u8.data(), u8.size(), COHORT_UINT8, 4);
  EXPECT_EQ(u8, (std::vector<uint8_t>{63, 0}));
  std::vector<int64_t> i64 = {INT64_MIN, INT64_MAX, -9};
  finalize_avg(i64.data(), i64.size(), COHORT_INT64, 8);
  EXPECT_EQ(i64, (std::vector<int64_t>{INT64_MIN / 8, INT64_MAX / 8, -1}));
  std::vector<uint64_t> u64 = {UINT64_MAX};
  finalize_avg(u64.data(), u64.size(), COHORT_UINT64, 3);
  EXPECT_EQ(u64[0], UINT64_MAX / 3);
}

TEST(ReduceFinalizeAvg, FloatsDivide) {
  std::vector<float> f32 = {3.0f, -1.0f, 0.0f, HUGE_VALF};
  finalize_avg(f32.data(), f32.size(), COHORT_FLOAT32, 2);
  EXPECT_EQ(f32, (std::vector<float>{1.5f, -0.5f, 0.0f, HUGE_VALF}));
  std::vector<double> f64 = {1.0};
  finalize_avg(f64.data(), f64.size(), COHORT_FLOAT64, 3);
  EXPECT_EQ(f64[0], 1.0 / 3);
  std::vector<uint16_t> bf16 = {float_to_bf16(6.0f)};
  finalize_avg(bf16.data(), bf16.size(), COHORT_BFLOAT16, 4);
  EXPECT_EQ(bf16_to_float(bf16[0]), 1.5f);
}

TEST(ReduceFinalizeAvg, TeamOfOneOrInvalidLeavesBufferAlone) {
  std::vector<int32_t> data = {5, -5};
  finalize_avg(data.data(), data.size(), COHORT_INT32, 1);
  finalize_avg(data.data(), data.size(), COHORT_INT32, 0);  // invalid: logs a warning
  EXPECT_EQ(data, (std::vector<int32_t>{5, -5}));
}

// 130 elements: two full vector chunks and a scalar tail, so each path is exercised.
constexpr size_t kPathCount = 130;

template <class T>
void check_wraps(cohort_dtype_t dtype, cohort_op_t op, T a, T b, T expected) {
  const std::vector<T> first(kPathCount, a), second(kPathCount, b);
  std::vector<T> inout = first, out(kPathCount);
  reduce_into(inout.data(), second.data(), kPathCount, dtype, op);
  EXPECT_EQ(inout, std::vector<T>(kPathCount, expected)) << dtype_name(dtype) << op_name(op);
  const void *ins[] = {first.data(), second.data()};
  reduce_multi(out.data(), ins, 2, kPathCount, dtype, op);
  EXPECT_EQ(out, std::vector<T>(kPathCount, expected)) << dtype_name(dtype) << op_name(op);
}

TEST(ReduceWrap, SignedOverflowWrapsAround) {
  check_wraps<int8_t>(COHORT_INT8, COHORT_SUM, 127, 1, -128);
  check_wraps<int8_t>(COHORT_INT8, COHORT_SUM, -128, -1, 127);
  check_wraps<int8_t>(COHORT_INT8, COHORT_PROD, -128, -1, -128);
  check_wraps<int8_t>(COHORT_INT8, COHORT_PROD, 16, 16, 0);
  check_wraps<int32_t>(COHORT_INT32, COHORT_SUM, INT32_MAX, 1, INT32_MIN);
  check_wraps<int32_t>(COHORT_INT32, COHORT_AVG, INT32_MIN, -1, INT32_MAX);
  check_wraps<int32_t>(COHORT_INT32, COHORT_PROD, 65536, 65536, 0);
  check_wraps<int32_t>(COHORT_INT32, COHORT_PROD, INT32_MIN, -1, INT32_MIN);
  check_wraps<int32_t>(COHORT_INT32, COHORT_PROD, 46341, 46341, -2147479015);
  check_wraps<int64_t>(COHORT_INT64, COHORT_SUM, INT64_MAX, 1, INT64_MIN);
  check_wraps<int64_t>(COHORT_INT64, COHORT_PROD, INT64_MIN, -1, INT64_MIN);
  check_wraps<int64_t>(COHORT_INT64, COHORT_PROD, int64_t{1} << 32, int64_t{1} << 32, 0);
}

TEST(ReduceWrap, UnsignedWrapsAround) {
  check_wraps<uint8_t>(COHORT_UINT8, COHORT_SUM, 255, 1, 0);
  check_wraps<uint8_t>(COHORT_UINT8, COHORT_PROD, 255, 255, 1);
  check_wraps<uint32_t>(COHORT_UINT32, COHORT_PROD, 0xffffffffu, 0xffffffffu, 1);
  check_wraps<uint64_t>(COHORT_UINT64, COHORT_SUM, UINT64_MAX, 2, 1);
}

// NaN in either operand of min/max gives NaN, in the vector chunks and in the tail.
template <class R, class T = typename R::Storage>
void check_nan_propagates(cohort_dtype_t dtype, cohort_op_t op) {
  const T nan = R::encode(NAN), one = R::encode(1.0), two = R::encode(2.0);
  const size_t nan_in_a[] = {0, 63, 64, 129, 5}, nan_in_b[] = {1, 65, 128, 5};
  std::vector<T> a(kPathCount, one), b(kPathCount, two), c(kPathCount, one);
  for (size_t i : nan_in_a) a[i] = nan;
  for (size_t i : nan_in_b) b[i] = nan;
  auto expect_nans = [&](const std::vector<T> &got, const char *what) {
    for (size_t i = 0; i < kPathCount; ++i) {
      bool want_nan = std::isnan(R::decode(a[i])) || std::isnan(R::decode(b[i]));
      double want = op == COHORT_MIN ? 1.0 : 2.0;
      double value = R::decode(got[i]);
      if (want_nan) {
        EXPECT_TRUE(std::isnan(value)) << what << " " << dtype_name(dtype) << " element " << i;
      } else {
        EXPECT_EQ(value, want) << what << " " << dtype_name(dtype) << " element " << i;
      }
    }
  };
  std::vector<T> inout = a;
  reduce_into(inout.data(), b.data(), kPathCount, dtype, op);
  expect_nans(inout, "reduce_into a,b");
  inout = b;
  reduce_into(inout.data(), a.data(), kPathCount, dtype, op);
  expect_nans(inout, "reduce_into b,a");
  std::vector<T> out(kPathCount);
  const void *ins[] = {c.data(), b.data(), a.data()};  // NaN in the second and third input
  reduce_multi(out.data(), ins, 3, kPathCount, dtype, op);
  expect_nans(out, "reduce_multi c,b,a");
}

TEST(ReduceNan, MinMaxPropagateNan) {
  for (cohort_op_t op : {COHORT_MIN, COHORT_MAX}) {
    check_nan_propagates<Fp16Ref>(COHORT_FLOAT16, op);
    check_nan_propagates<Bf16Ref>(COHORT_BFLOAT16, op);
    check_nan_propagates<FloatRef<float>>(COHORT_FLOAT32, op);
    check_nan_propagates<FloatRef<double>>(COHORT_FLOAT64, op);
  }
}

TEST(ReduceHalf, MultiAccumulatesInFp32AndRoundsOnce) {
  // 2048 + 1 + 1 in fp16 (ulp 2 at 2048): stepwise, each +1 is a tie that rounds back to
  // 2048; accumulated in fp32 the total 2050 is exact.  bf16 the same at 256.
  struct Case {
    cohort_dtype_t dtype;
    uint16_t (*narrow)(float);
    float (*widen)(uint16_t);
    float big;
  };
  for (const Case &c : {Case{COHORT_FLOAT16, float_to_fp16, fp16_to_float, 2048.0f},
                        Case{COHORT_BFLOAT16, float_to_bf16, bf16_to_float, 256.0f}}) {
    std::vector<uint16_t> big(kPathCount, c.narrow(c.big)), one(kPathCount, c.narrow(1.0f));
    std::vector<uint16_t> out(kPathCount);
    const void *ins[] = {big.data(), one.data(), one.data()};
    reduce_multi(out.data(), ins, 3, kPathCount, c.dtype, COHORT_SUM);
    for (uint16_t x : out) ASSERT_EQ(c.widen(x), c.big + 2) << dtype_name(c.dtype);
    // Two reduce_into calls round twice: the difference the contract is about.
    reduce_into(big.data(), one.data(), kPathCount, c.dtype, COHORT_SUM);
    reduce_into(big.data(), one.data(), kPathCount, c.dtype, COHORT_SUM);
    EXPECT_EQ(c.widen(big[0]), c.big) << dtype_name(c.dtype);
  }
}

// Count 0 reads and writes nothing: not the buffers, not what is next to them.
TEST(ReduceEdge, ZeroCountTouchesNothing) {
  std::vector<float> out = {1.5f, -2.0f}, in = {100.0f, 200.0f};
  std::vector<int8_t> small = {7, -7};
  std::vector<double> avg = {8.0, 12.0};
  const void *ins[3] = {small.data(), small.data(), small.data()};
  reduce_into(out.data(), in.data(), 0, COHORT_FLOAT32, COHORT_SUM);
  reduce_multi(small.data(), ins, 3, 0, COHORT_INT8, COHORT_MAX);
  finalize_avg(avg.data(), 0, COHORT_FLOAT64, 4);
  EXPECT_EQ(out, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(small, (std::vector<int8_t>{7, -7}));
  EXPECT_EQ(avg, (std::vector<double>{8.0, 12.0}));
  // And one element is one element: the neighbour stays.
  reduce_into(out.data(), in.data(), 1, COHORT_FLOAT32, COHORT_SUM);
  finalize_avg(avg.data(), 1, COHORT_FLOAT64, 4);
  EXPECT_EQ(out, (std::vector<float>{101.5f, -2.0f}));
  EXPECT_EQ(avg, (std::vector<double>{2.0, 12.0}));
}

TEST(ReduceEdge, InvalidArgumentsLeaveBuffersAlone) {
  std::vector<int32_t> inout = {1, 2}, in = {10, 20};
  reduce_into(inout.data(), in.data(), 2, static_cast<cohort_dtype_t>(COHORT_NUM_DTYPES),
              COHORT_SUM);
  reduce_into(inout.data(), in.data(), 2, COHORT_INT32, static_cast<cohort_op_t>(COHORT_NUM_OPS));
  const void *ins[] = {in.data()};
  reduce_multi(inout.data(), ins, 0, 2, COHORT_INT32, COHORT_SUM);
  EXPECT_EQ(inout, (std::vector<int32_t>{1, 2}));
}

// Random fp32 and bf16 inputs, where sums round: the error of summing n terms left to right
// in fp32 is at most gamma * sum|x|, gamma = (n - 1) u / (1 - (n - 1) u), u = 2^-24 (Higham,
// recursive summation); bf16 adds the final rounding to bf16, at most 2^-8 of the result.
TEST(ReduceRandom, SumsWithinRecursiveSummationBound) {
  constexpr int kNin = 8;
  constexpr size_t kCount = 4099;
  constexpr double kGamma = (kNin - 1) * 0x1p-24 / (1 - (kNin - 1) * 0x1p-24);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> f32(kNin, std::vector<float>(kCount));
  std::vector<std::vector<uint16_t>> bf16(kNin, std::vector<uint16_t>(kCount));
  const void *f32_ins[kNin], *bf16_ins[kNin];
  for (int k = 0; k < kNin; ++k) {
    for (size_t i = 0; i < kCount; ++i) {
      f32[k][i] = dist(rng);
      bf16[k][i] = float_to_bf16(dist(rng));
    }
    f32_ins[k] = f32[k].data();
    bf16_ins[k] = bf16[k].data();
  }
  std::vector<float> f32_out(kCount);
  std::vector<uint16_t> bf16_out(kCount);
  reduce_multi(f32_out.data(), f32_ins, kNin, kCount, COHORT_FLOAT32, COHORT_SUM);
  reduce_multi(bf16_out.data(), bf16_ins, kNin, kCount, COHORT_BFLOAT16, COHORT_SUM);
  for (size_t i = 0; i < kCount; ++i) {
    double exact = 0, magnitude = 0, bf16_exact = 0, bf16_magnitude = 0;
    for (int k = 0; k < kNin; ++k) {
      exact += f32[k][i];
      magnitude += std::fabs(f32[k][i]);
      bf16_exact += bf16_to_float(bf16[k][i]);
      bf16_magnitude += std::fabs(bf16_to_float(bf16[k][i]));
    }
    ASSERT_LE(std::fabs(f32_out[i] - exact), kGamma * magnitude) << "fp32 element " << i;
    double bf16_bound = kGamma * bf16_magnitude * (1 + 0x1p-8) + 0x1p-8 * std::fabs(bf16_exact);
    ASSERT_LE(std::fabs(bf16_to_float(bf16_out[i]) - bf16_exact), bf16_bound)
        << "bf16 element " << i;
  }
}

}  // namespace
}  // namespace cohort::tl_host
