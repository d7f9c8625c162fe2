// bf16 for kernel_emul_test (cuda_emul_prelude.h): conversions as the host path's.
#pragma once

#include "coll/half.h"

struct __nv_bfloat16 {
  uint16_t bits;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
inline __nv_bfloat16 __ushort_as_bfloat16(uint16_t bits) { return {bits}; }
inline uint16_t __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
inline float __bfloat162float(__nv_bfloat16 h) { return cohort::coll::bf16_to_float(h.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return {cohort::coll::float_to_bf16(f)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) {
  return {__float2bfloat16_rn(lo), __float2bfloat16_rn(hi)};
}
