// Element types and reduction operators of the kernels, for host and device code alike (no
// CUDA header needed).
//
// The values are those of cohort.h's cohort_dtype_t and cohort_op_t, so host code converts
// with a cast (test/gpu/kernel_test.cc checks every value).  The kernels do not include
// cohort.h itself: this folder builds with its own include path alone.
#pragma once

#include <cstddef>

namespace cohort::kernels {

enum class DType : int {
  kInt8 = 0,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,   // IEEE binary16, computed in fp32
  kBfloat16,  // computed in fp32
  kFloat32,
  kFloat64,
};
inline constexpr int kNumDTypes = 10;

// kAvg reduces as kSum, then divides the stored result once by a divisor (the team size):
// integers truncate toward zero, fp16/bf16 divide in fp32 and round again.
enum class RedOp : int { kSum = 0, kProd, kMin, kMax, kAvg };
inline constexpr int kNumRedOps = 5;

// The most inputs one launch of reduce.h takes (its kernels' parameter holds the pointers);
// the collective kernels reduce every local rank's input in one pass, up to kMaxLocalRanks.
inline constexpr int kMaxReduceInputs = 8;

constexpr size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUint8: return 1;
    case DType::kFloat16:
    case DType::kBfloat16: return 2;
    case DType::kInt32:
    case DType::kUint32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kUint64:
    case DType::kFloat64: return 8;
  }
  return 0;
}

constexpr bool dtype_valid(DType dtype) {
  return static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < kNumDTypes;
}
constexpr bool op_valid(RedOp op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumRedOps;
}

}  // namespace cohort::kernels
