// Types behind primitives.cuh: 16-byte register chunks, element formats, reduction ops.
// Device code only; include primitives.cuh, not this.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "types.h"

namespace cohort::kernels::detail {

// ------------------------------------------------------------------ words and chunks

// The unsigned type of one access of A bytes.
template <int A>
struct WordOf;
template <>
struct WordOf<1> {
  using type = uint8_t;
};
template <>
struct WordOf<2> {
  using type = uint16_t;
};
template <>
struct WordOf<4> {
  using type = uint32_t;
};
template <>
struct WordOf<8> {
  using type = uint64_t;
};
template <>
struct WordOf<16> {
  using type = uint4;
};
template <int A>
using Word = typename WordOf<A>::type;

// 16 bytes in registers, seen as words of any width or as elements of storage type S.  Only
// ever indexed with compile-time constants (unrolled loops), so it stays in registers.
template <class S>
union Chunk {
  uint4 u128;
  uint64_t u64[2];
  uint32_t u32[4];
  uint16_t u16[8];
  uint8_t u8[16];
  S elem[16 / sizeof(S)];
};

template <int A, class S>
__device__ __forceinline__ Word<A> &word(Chunk<S> &chunk, int i) {
  if constexpr (A == 16)
    return chunk.u128;
  else if constexpr (A == 8)
    return chunk.u64[i];
  else if constexpr (A == 4)
    return chunk.u32[i];
  else if constexpr (A == 2)
    return chunk.u16[i];
  else
    return chunk.u8[i];
}

// kernel_emul_test's shim (test/gpu/emul) defines COHORT_KERNELS_EMULATION and
// cohort_emul_check_aligned: every access then checks that its address is aligned to its
// width, as the GPU needs (a misaligned access faults or drops low address bits there, while
// the CPU the emulation runs on does it silently).
#ifdef COHORT_KERNELS_EMULATION
#define COHORT_KERNELS_CHECK_ALIGNED(p, bytes) cohort_emul_check_aligned(p, bytes)
#else
#define COHORT_KERNELS_CHECK_ALIGNED(p, bytes) ((void)0)
#endif

// Global loads and stores of one word, p aligned to A.  Loads are plain weak ones, never the
// read-only path (ld.global.nc): peers may write the data during a kernel, after a flag the
// caller read.  Stores of 16 bytes are streaming (st.global.cs, evict first: the output of a
// pass over a buffer is rarely read again soon; a little faster than plain stores on an H200).
template <int A>
__device__ __forceinline__ Word<A> load_word(const char *p) {
  COHORT_KERNELS_CHECK_ALIGNED(p, A);
  return *reinterpret_cast<const Word<A> *>(p);
}
template <int A>
__device__ __forceinline__ void store_word(char *p, Word<A> value) {
  COHORT_KERNELS_CHECK_ALIGNED(p, A);
  if constexpr (A == 16)
    __stcs(reinterpret_cast<Word<A> *>(p), value);
  else
    *reinterpret_cast<Word<A> *>(p) = value;
}

// One element of S at p, aligned to A (A < sizeof(S): the element is assembled from
// sizeof(S) / A accesses).
template <int A, class S>
__device__ __forceinline__ S load_elem(const char *p) {
  if constexpr (A >= sizeof(S)) {
    COHORT_KERNELS_CHECK_ALIGNED(p, sizeof(S));
    return *reinterpret_cast<const S *>(p);
  } else {
    union {
      S value;
      Word<A> part[sizeof(S) / A];
    } elem;
#pragma unroll
    for (int t = 0; t < static_cast<int>(sizeof(S) / A); ++t)
      elem.part[t] = load_word<A>(p + t * A);
    return elem.value;
  }
}

// The parts of a misaligned element are cut from 32-bit words with byte permutes, never
// stored from the element's own register: ptxas (CUDA 13.0, every arch) compiles a byte store
// of an fp16/bf16 value just converted from fp32 (cvt.rn.f16.f32 or .bf16, then st.u8 of
// that register) into a conversion of the *value* to an 8-bit integer (F2I.U8.F16.TRUNC),
// so the low byte came out as the value truncated to 0..255, not the value's low byte.
template <int A, class S>
__device__ __forceinline__ void store_elem(char *p, S value) {
  if constexpr (A >= sizeof(S)) {
    COHORT_KERNELS_CHECK_ALIGNED(p, sizeof(S));
    *reinterpret_cast<S *>(p) = value;
  } else {
    uint32_t bits[(sizeof(S) + 3) / 4] = {};
    memcpy(bits, &value, sizeof(S));
#pragma unroll
    for (int t = 0; t < static_cast<int>(sizeof(S) / A); ++t) {
      const int byte = t * A;
      const uint32_t word = bits[byte / 4];
      if constexpr (A == 1) {
        store_word<1>(p + byte, static_cast<uint8_t>(__byte_perm(word, 0, 0x4440 + byte % 4)));
      } else if constexpr (A == 2) {
        store_word<2>(p + byte,
                      static_cast<uint16_t>(__byte_perm(word, 0, byte % 4 ? 0x4432 : 0x4410)));
      } else {
        store_word<A>(p + byte, word);
      }
    }
  }
}

// ------------------------------------------------------------------ formats

// How a dtype is stored and the type its arithmetic runs in (as src/coll/host_reduce.cc).
template <class T>
struct NativeFormat {
  using Storage = T;
  using Compute = T;
  static __device__ __forceinline__ T widen(T x) { return x; }
  static __device__ __forceinline__ T narrow(T x) { return x; }
};

struct Fp16Format {
  using Storage = uint16_t;
  using Compute = float;
  static __device__ __forceinline__ float widen(uint16_t x) {
    return __half2float(__ushort_as_half(x));
  }
  static __device__ __forceinline__ uint16_t narrow(float x) {
    return __half_as_ushort(__float2half_rn(x));
  }
  // Two at once: one conversion instruction for the pair where the chip has one (sm_80+).
  static __device__ __forceinline__ uint32_t narrow2(float lo, float hi) {
    const __half2 pair = __floats2half2_rn(lo, hi);
    uint32_t bits;
    memcpy(&bits, &pair, sizeof bits);
    return bits;
  }
};

struct Bf16Format {
  using Storage = uint16_t;
  using Compute = float;
  static __device__ __forceinline__ float widen(uint16_t x) {
    return __bfloat162float(__ushort_as_bfloat16(x));
  }
  static __device__ __forceinline__ uint16_t narrow(float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  }
  static __device__ __forceinline__ uint32_t narrow2(float lo, float hi) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    uint32_t bits;
    memcpy(&bits, &pair, sizeof bits);
    return bits;
  }
};

template <class Fmt>
inline constexpr bool kNarrowsInPairs =
    std::is_same_v<Fmt, Fp16Format> || std::is_same_v<Fmt, Bf16Format>;

template <DType D>
struct FormatOf;
template <>
struct FormatOf<DType::kInt8> {
  using type = NativeFormat<int8_t>;
};
template <>
struct FormatOf<DType::kUint8> {
  using type = NativeFormat<uint8_t>;
};
template <>
struct FormatOf<DType::kInt32> {
  using type = NativeFormat<int32_t>;
};
template <>
struct FormatOf<DType::kUint32> {
  using type = NativeFormat<uint32_t>;
};
template <>
struct FormatOf<DType::kInt64> {
  using type = NativeFormat<int64_t>;
};
template <>
struct FormatOf<DType::kUint64> {
  using type = NativeFormat<uint64_t>;
};
template <>
struct FormatOf<DType::kFloat16> {
  using type = Fp16Format;
};
template <>
struct FormatOf<DType::kBfloat16> {
  using type = Bf16Format;
};
template <>
struct FormatOf<DType::kFloat32> {
  using type = NativeFormat<float>;
};
template <>
struct FormatOf<DType::kFloat64> {
  using type = NativeFormat<double>;
};
template <DType D>
using Format = typename FormatOf<D>::type;

// ------------------------------------------------------------------ ops

// Integer sum and prod wrap modulo 2^bits, signed types included: they run in the unsigned
// type (8-bit operands promote to int, which holds any sum or product of two).  fp32/fp64 use
// the _rn intrinsics so that no multiply-add is ever contracted: results are the host path's,
// bit for bit.
template <class T>
__device__ __forceinline__ T wrapping_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
__device__ __forceinline__ T wrapping_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// kHasBytewise: bytewise<T>(a, b) applies the op to the four 8-bit lanes of two words at once.
struct OpSum {
  static constexpr bool kDivides = true;  // carries kAvg's divisor
  static constexpr bool kHasBytewise = true;
  template <class T>
  static __device__ __forceinline__ uint32_t bytewise(uint32_t a, uint32_t b) {
    return __vadd4(a, b);  // wraps per lane: the same for signed and unsigned
  }
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (std::is_same_v<T, float>)
      return __fadd_rn(a, b);
    else if constexpr (std::is_same_v<T, double>)
      return __dadd_rn(a, b);
    else
      return wrapping_add(a, b);
  }
};

struct OpProd {
  static constexpr bool kDivides = false;
  static constexpr bool kHasBytewise = false;
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (std::is_same_v<T, float>)
      return __fmul_rn(a, b);
    else if constexpr (std::is_same_v<T, double>)
      return __dmul_rn(a, b);
    else
      return wrapping_mul(a, b);
  }
};

// Floating-point min/max propagate NaN from either side, and pick between equal zeros as the
// host path does (`a != a` is the NaN test).
struct OpMin {
  static constexpr bool kDivides = false;
  static constexpr bool kHasBytewise = true;
  template <class T>
  static __device__ __forceinline__ uint32_t bytewise(uint32_t a, uint32_t b) {
    if constexpr (std::is_signed_v<T>)
      return __vmins4(a, b);
    else
      return __vminu4(a, b);
  }
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      return (a < b || a != a) ? a : b;
    else
      return b < a ? b : a;
  }
};

struct OpMax {
  static constexpr bool kDivides = false;
  static constexpr bool kHasBytewise = true;
  template <class T>
  static __device__ __forceinline__ uint32_t bytewise(uint32_t a, uint32_t b) {
    if constexpr (std::is_signed_v<T>)
      return __vmaxs4(a, b);
    else
      return __vmaxu4(a, b);
  }
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      return (a > b || a != a) ? a : b;
    else
      return b > a ? b : a;
  }
};

template <RedOp Op>
struct OpOf;
template <>
struct OpOf<RedOp::kSum> {
  using type = OpSum;
};
template <>
struct OpOf<RedOp::kAvg> {
  using type = OpSum;
};
template <>
struct OpOf<RedOp::kProd> {
  using type = OpProd;
};
template <>
struct OpOf<RedOp::kMin> {
  using type = OpMin;
};
template <>
struct OpOf<RedOp::kMax> {
  using type = OpMax;
};

// ------------------------------------------------------------------ kAvg's division

// stored / divisor as the host path's finalize_avg: integers in a type that holds any
// divisor (32 bits give the same quotient as its 64-bit division for 8- and 32-bit values),
// truncating toward zero; floats divide correctly rounded; fp16/bf16 divide in fp32.
template <class Fmt>
__device__ __forceinline__ typename Fmt::Storage divide(typename Fmt::Storage stored, int divisor) {
  using S = typename Fmt::Storage;
  using C = typename Fmt::Compute;
  if constexpr (std::is_same_v<C, float>) {
    return Fmt::narrow(__fdiv_rn(Fmt::widen(stored), static_cast<float>(divisor)));
  } else if constexpr (std::is_same_v<C, double>) {
    return __ddiv_rn(stored, static_cast<double>(divisor));
  } else if constexpr (sizeof(S) <= 4) {
    using Wide = std::conditional_t<std::is_signed_v<S>, int32_t, uint32_t>;
    return static_cast<S>(static_cast<Wide>(stored) / static_cast<Wide>(divisor));
  } else {
    return static_cast<S>(stored / static_cast<S>(divisor));
  }
}

}  // namespace cohort::kernels::detail
