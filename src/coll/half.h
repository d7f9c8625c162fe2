// IEEE binary16 (fp16) and bfloat16 (bf16) <-> float conversion by bit manipulation.
//
// Widening is exact.  Narrowing rounds to nearest, ties to even; values beyond the format's
// range become Inf; results below the smallest normal become subnormals or zero.  A NaN stays
// NaN with its sign and top payload bits, and comes back quiet, so a NaN whose payload lies
// only in the bits that narrowing drops cannot turn into Inf.  (float_to_fp16 matches F16C's
// vcvtps2ph bit for bit over all 2^32 floats; AVX512-BF16 differs only in flushing float
// subnormals to zero.)
//
// Written without branches so that loops over arrays vectorise with plain SSE2: every case is
// computed and the right one selected.  No compiler _Float16 is needed: gcc 12 implements it on
// x86-64 without F16C through libgcc calls, one element at a time.
//
// float_to_fp16 rounds fp16 subnormals with one float addition, so it assumes the default
// floating-point rounding mode, as every floating-point reduction in Cohort does.
#pragma once

#include <bit>
#include <cstdint>

namespace cohort::coll {

// when ? a : b through a mask.  With a conditional expression gcc may move a float operation
// into the arm that uses it, and then cannot flatten the branch (the operation may raise an
// FP exception), so the loop does not vectorise.
inline uint32_t select_bits(bool when, uint32_t a, uint32_t b) {
  uint32_t mask = 0u - static_cast<uint32_t>(when);
  return (a & mask) | (b & ~mask);
}

inline float fp16_to_float(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t magnitude = half & 0x7fffu;
  // Exponent and mantissa move up 13 bits; the exponent is rebiased from 15 to 127, or, for
  // Inf and NaN, from 31 to 255.
  uint32_t shifted = magnitude << 13;
  uint32_t inf_nan = shifted + ((255u - 31u) << 23);
  // A subnormal m * 2^-24 is built as 2^-14 + m * 2^-24 (exponent 1 rebiased) minus 2^-14,
  // exact.  Normal numbers subtract zero: every finite value takes the one float operation.
  bool is_subnormal = magnitude < 0x0400u;
  uint32_t finite = shifted + ((127u - 15u + is_subnormal) << 23);
  uint32_t offset = select_bits(is_subnormal, (127u - 14u) << 23, 0u);
  float value = std::bit_cast<float>(finite) - std::bit_cast<float>(offset);
  uint32_t bits = select_bits(magnitude >= 0x7c00u, inf_nan, std::bit_cast<uint32_t>(value));
  return std::bit_cast<float>(bits | sign);
}

// Every case is computed as the fp16 pattern shifted left by 13 and narrowed by one shift at
// the end: kept 32 bits wide, the vector code needs no repacking between the selects.
inline uint16_t float_to_fp16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t magnitude = bits & 0x7fffffffu;
  uint32_t sign = (bits >> 3) & (0x8000u << 13);
  // NaN: Inf's exponent, the quiet bit, the top of the payload.
  uint32_t nan = (0x7e00u << 13) | (magnitude & (0x3ffu << 13));
  // Rebias the exponent, then add just under half an fp16 ulp plus the ulp's lowest kept bit:
  // this carries exactly when the dropped 13 bits are above half, or at half with an odd
  // result.  A carry out of the mantissa bumps the exponent, up to Inf from 65520 on.
  uint32_t normal = magnitude - ((127u - 15u) << 23) + 0x0fffu + ((magnitude >> 13) & 1u);
  // Below 2^-14: in 0.5f + x the float ulp is 2^-24, the fp16 subnormal step, so the FPU's
  // rounding of the sum is the fp16 rounding; the mantissa bits above 0.5 are the result
  // (0x400, the smallest normal, when it rounds up to it).
  float aligned = std::bit_cast<float>(magnitude) + 0.5f;
  uint32_t subnormal = (std::bit_cast<uint32_t>(aligned) - std::bit_cast<uint32_t>(0.5f)) << 13;
  uint32_t finite = select_bits(magnitude < 0x38800000u, subnormal, normal);
  // 65536 and above, Inf included, is Inf.
  finite = select_bits(magnitude >= 0x47800000u, 0x7c00u << 13, finite);
  uint32_t half = select_bits(magnitude > 0x7f800000u, nan, finite);
  return static_cast<uint16_t>((half | sign) >> 13);
}

// bf16 is the top half of a float, so widening is a shift.
inline float bf16_to_float(uint16_t bf16) {
  return std::bit_cast<float>(static_cast<uint32_t>(bf16) << 16);
}

inline uint16_t float_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  // The same carry trick as fp16 with 16 dropped bits; subnormals and overflow to Inf need no
  // case of their own because bf16 keeps float's exponent.  A NaN skips rounding and is made
  // quiet (float's quiet bit is bf16's).  Everything stays 32-bit until the final shift, so
  // the vector code narrows once.
  uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  bool is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(select_bits(is_nan, bits | 0x00400000u, rounded) >> 16);
}

}  // namespace cohort::coll
