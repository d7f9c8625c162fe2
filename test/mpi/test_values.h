// Element values of every Cohort dtype as doubles, for the multi-rank tests' inputs and
// checks.  Small integers are exact in every dtype, fp16 and bf16 included (|v| <= 256).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cohort.h"

inline size_t elem_bytes(cohort_dtype_t t) {
  switch (t) {
    case COHORT_INT8:
    case COHORT_UINT8: return 1;
    case COHORT_FLOAT16:
    case COHORT_BFLOAT16: return 2;
    case COHORT_INT32:
    case COHORT_UINT32:
    case COHORT_FLOAT32: return 4;
    default: return 8;
  }
}

inline void store(cohort_dtype_t t, void *buffer, size_t i, double v) {
  switch (t) {
    case COHORT_INT8:
      static_cast<int8_t *>(buffer)[i] = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case COHORT_UINT8:
      static_cast<uint8_t *>(buffer)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case COHORT_INT32: static_cast<int32_t *>(buffer)[i] = static_cast<int32_t>(v); break;
    case COHORT_UINT32: static_cast<uint32_t *>(buffer)[i] = static_cast<uint32_t>(v); break;
    case COHORT_INT64: static_cast<int64_t *>(buffer)[i] = static_cast<int64_t>(v); break;
    case COHORT_UINT64: static_cast<uint64_t *>(buffer)[i] = static_cast<uint64_t>(v); break;
    case COHORT_FLOAT32: static_cast<float *>(buffer)[i] = static_cast<float>(v); break;
    case COHORT_FLOAT64: static_cast<double *>(buffer)[i] = v; break;
    case COHORT_BFLOAT16: {
      float f = static_cast<float>(v);
      uint32_t bits;
      memcpy(&bits, &f, 4);
      static_cast<uint16_t *>(buffer)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    case COHORT_FLOAT16: {
      uint16_t h = 0;
      if (v != 0) {
        int e = 0;
        double m = frexp(fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
        h = static_cast<uint16_t>(((e - 1 + 15) << 10) |
                                  (static_cast<int>((m * 2 - 1) * 1024) & 0x3ff));
        if (v < 0) h |= 0x8000;
      }
      static_cast<uint16_t *>(buffer)[i] = h;
      break;
    }
    default: break;
  }
}

inline double load(cohort_dtype_t t, const void *buffer, size_t i) {
  switch (t) {
    case COHORT_INT8: return static_cast<const int8_t *>(buffer)[i];
    case COHORT_UINT8: return static_cast<const uint8_t *>(buffer)[i];
    case COHORT_INT32: return static_cast<const int32_t *>(buffer)[i];
    case COHORT_UINT32: return static_cast<const uint32_t *>(buffer)[i];
    case COHORT_INT64: return static_cast<double>(static_cast<const int64_t *>(buffer)[i]);
    case COHORT_UINT64: return static_cast<double>(static_cast<const uint64_t *>(buffer)[i]);
    case COHORT_FLOAT32: return static_cast<const float *>(buffer)[i];
    case COHORT_FLOAT64: return static_cast<const double *>(buffer)[i];
    case COHORT_BFLOAT16: {
      uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t *>(buffer)[i]) << 16;
      float f;
      memcpy(&f, &bits, 4);
      return f;
    }
    case COHORT_FLOAT16: {
      uint16_t h = static_cast<const uint16_t *>(buffer)[i];
      int e = (h >> 10) & 0x1f, m = h & 0x3ff;
      double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
      return h & 0x8000 ? -v : v;
    }
    default: return 0;
  }
}

inline bool is_float(cohort_dtype_t t) {
  return t == COHORT_FLOAT16 || t == COHORT_BFLOAT16 || t == COHORT_FLOAT32 || t == COHORT_FLOAT64;
}
