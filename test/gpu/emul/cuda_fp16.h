// fp16 for kernel_emul_test (cuda_emul_prelude.h): conversions as the host path's.
#pragma once

#include "coll/half.h"

struct __half {
  uint16_t bits;
};
struct __half2 {
  __half x, y;
};
inline __half __ushort_as_half(uint16_t bits) { return {bits}; }
inline uint16_t __half_as_ushort(__half h) { return h.bits; }
inline float __half2float(__half h) { return cohort::coll::fp16_to_float(h.bits); }
inline __half __float2half_rn(float f) { return {cohort::coll::float_to_fp16(f)}; }
inline __half2 __floats2half2_rn(float lo, float hi) {
  return {__float2half_rn(lo), __float2half_rn(hi)};
}
