// GPU test of the copy and reduce kernels (src/kernels/reduce.h, over primitives.cuh).
//
// Every dtype x op x count x pointer offsets x number of inputs runs on the GPU and is compared
// with a host reference (reduce_reference.h) that computes as the host path does: the same
// fp16/bf16 conversions (coll/half.h), integers wrapping in their own type, floating-point
// inputs combined left to right in the compute type (fp32 for fp16/bf16) and rounded once,
// kAvg dividing the stored sum as finalize_avg.  So every element must match bit for bit (two
// NaNs match whatever their payloads).  Floating-point inputs are random values of every
// magnitude the format's arithmetic keeps finite, with NaN, +-Inf, +-0, the smallest
// subnormal and the largest finite value sprinkled in (at other places in each input).  64 guard
// bytes on each side of the output must stay untouched.
//
// usage: kernel_test [--quick] [--dtype NAME]
//   --quick  counts up to 1023 and fewer offsets (for compute-sanitizer: make memcheck)
// Exits 0 when everything matched, 1 on a mismatch, 77 (skip) without a CUDA device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cohort.h"
#include "kernels/reduce.h"
#include "reduce_reference.h"
#include "coll/half.h"

namespace {

using cohort::kernel_test::fill_inputs;
using cohort::kernel_test::is_float;
using cohort::kernel_test::is_nan;
using cohort::kernel_test::kDtypeNames;
using cohort::kernel_test::kOpNames;
using cohort::kernel_test::reference;
using cohort::kernel_test::with_ref;
using cohort::kernels::CopyArgs;
using cohort::kernels::DType;
using cohort::kernels::kMaxReduceInputs;
using cohort::kernels::LaunchShape;
using cohort::kernels::RedOp;
using cohort::kernels::ReduceArgs;

// The kernels' enums are numbered as the public API's, so host code converts by a cast.
static_assert(static_cast<int>(DType::kInt8) == COHORT_INT8 &&
              static_cast<int>(DType::kUint8) == COHORT_UINT8 &&
              static_cast<int>(DType::kInt32) == COHORT_INT32 &&
              static_cast<int>(DType::kUint32) == COHORT_UINT32 &&
              static_cast<int>(DType::kInt64) == COHORT_INT64 &&
              static_cast<int>(DType::kUint64) == COHORT_UINT64 &&
              static_cast<int>(DType::kFloat16) == COHORT_FLOAT16 &&
              static_cast<int>(DType::kBfloat16) == COHORT_BFLOAT16 &&
              static_cast<int>(DType::kFloat32) == COHORT_FLOAT32 &&
              static_cast<int>(DType::kFloat64) == COHORT_FLOAT64 &&
              cohort::kernels::kNumDTypes == COHORT_NUM_DTYPES);
static_assert(static_cast<int>(RedOp::kSum) == COHORT_SUM &&
              static_cast<int>(RedOp::kProd) == COHORT_PROD &&
              static_cast<int>(RedOp::kMin) == COHORT_MIN &&
              static_cast<int>(RedOp::kMax) == COHORT_MAX &&
              static_cast<int>(RedOp::kAvg) == COHORT_AVG &&
              cohort::kernels::kNumRedOps == COHORT_NUM_OPS);

constexpr size_t kGuard = 64;            // bytes checked on each side of the output
constexpr size_t kSlack = 16;            // room for the pointer offsets
constexpr unsigned char kPoison = 0xa5;  // what the output slot holds before a launch

#define CUDA_CHECK(call)                                                 \
  do {                                                                   \
    cudaError_t err_ = (call);                                           \
    if (err_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(err_));                            \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

// cudaMalloc for byte pointers (cuda_runtime_api.h has only the void ** form).
unsigned char *device_alloc(size_t bytes) {
  void *p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes));
  return static_cast<unsigned char *>(p);
}

// ------------------------------------------------------------------ cases

// Byte offsets of the output and of each input from a 16-byte aligned address.
struct Offsets {
  const char *name;
  size_t dst;
  size_t src[kMaxReduceInputs];
  bool in_place;  // dst is srcs[0] (dst offset unused)
};

const Offsets kOffsets[] = {
    {"aligned", 0, {0, 0, 0, 0, 0, 0, 0, 0}, false},
    {"all+2", 2, {2, 2, 2, 2, 2, 2, 2, 2}, false},
    {"all+4", 4, {4, 4, 4, 4, 4, 4, 4, 4}, false},
    {"all+8", 8, {8, 8, 8, 8, 8, 8, 8, 8}, false},
    {"all+3", 3, {3, 3, 3, 3, 3, 3, 3, 3}, false},
    {"dst0/src4,8,12", 0, {4, 8, 12, 4, 8, 12, 4, 8}, false},      // common alignment 4
    {"dst8/src0,8", 8, {0, 8, 0, 8, 0, 8, 0, 8}, false},           // common alignment 8
    {"dst2/src6,10,14", 2, {6, 10, 14, 6, 10, 14, 6, 10}, false},  // 4, misaligned by 2
    {"dst1/src3,5,7", 1, {3, 5, 7, 3, 5, 7, 3, 5}, false},         // 2, misaligned by 1
    {"in-place+4", 0, {4, 4, 4, 4, 4, 4, 4, 4}, true},
    {"in-place+6", 0, {6, 2, 6, 6, 10, 14, 6, 2}, true},
};

struct Options {
  bool quick = false;
  int only_dtype = -1;
};

struct Arena {
  unsigned char *device = nullptr;
  size_t slot_bytes = 0;
  unsigned char *slot(int i) const { return device + static_cast<size_t>(i) * slot_bytes; }
};

struct Tally {
  long cases = 0;
  long failures = 0;
  void fail(const std::string &what) {
    ++failures;
    if (failures <= 30) std::printf("FAIL %s\n", what.c_str());
  }
};

std::string describe(DType dtype, RedOp op, int nsrcs, size_t count, const Offsets &offsets,
                     const LaunchShape &shape) {
  char text[256];
  std::snprintf(text, sizeof text, "%s %s k=%d count=%zu offsets=%s grid=%dx%d",
                kDtypeNames[static_cast<int>(dtype)], kOpNames[static_cast<int>(op)], nsrcs, count,
                offsets.name, shape.blocks, shape.threads);
  return text;
}

// Reads back the output at `dst` (count elements) with kGuard bytes on each side, compares it
// with `expected` and the guards with the poison.  Returns what differs, "" if nothing.
std::string check_output(DType dtype, const unsigned char *dst, const unsigned char *expected,
                         size_t count) {
  const size_t size = cohort::kernels::dtype_size(dtype);
  std::vector<unsigned char> window(count * size + 2 * kGuard);
  CUDA_CHECK(cudaMemcpy(window.data(), dst - kGuard, window.size(), cudaMemcpyDeviceToHost));
  const size_t end = kGuard + count * size;
  for (size_t b = 0; b < window.size(); ++b) {
    if ((b < kGuard || b >= end) && window[b] != kPoison) {
      char text[128];
      std::snprintf(text, sizeof text, "guard byte %+ld changed to 0x%02x",
                    b < kGuard ? -static_cast<long>(kGuard - b) : static_cast<long>(b - end),
                    window[b]);
      return text;
    }
  }
  long shown = 0;
  std::string what;
  for (size_t i = 0; i < count; ++i) {
    const unsigned char *got = window.data() + kGuard + i * size;
    const unsigned char *want = expected + i * size;
    if (std::memcmp(got, want, size) == 0) continue;
    if (is_float(dtype) && is_nan(dtype, got) && is_nan(dtype, want)) continue;
    if (shown++ < 4) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, got, size);
      std::memcpy(&w, want, size);
      char text[128];
      std::snprintf(text, sizeof text, "%s[%zu] 0x%" PRIx64 " expected 0x%" PRIx64,
                    what.empty() ? "" : "; ", i, g, w);
      what += text;
    }
  }
  if (shown > 4) what += "; ... " + std::to_string(shown) + " elements differ";
  return what;
}

LaunchShape shape_for(long case_index) {
  switch (case_index % 3) {
    case 1: return {3, 96};  // 9 warps over 3 blocks: uneven strides, the loops' remainders
    case 2: return {1, 32};  // one warp does everything
    default: return {};      // the launcher's choice
  }
}

void run_reduce_cases(DType dtype, const Options &options, const Arena &arena,
                      const std::vector<std::vector<unsigned char>> &inputs, Tally *tally) {
  const size_t size = cohort::kernels::dtype_size(dtype);
  const std::vector<size_t> counts = options.quick
                                         ? std::vector<size_t>{0, 1, 7, 1023}
                                         : std::vector<size_t>{0, 1, 7, 1023, 65537, 1u << 20};
  const int knums[] = {1, 2, 3, 8};
  const RedOp ops[] = {RedOp::kSum, RedOp::kProd, RedOp::kMin, RedOp::kMax, RedOp::kAvg};
  const int out_slot = kMaxReduceInputs;
  std::vector<unsigned char> expected;
  long before = tally->failures, cases_before = tally->cases;
  for (size_t count : counts) {
    expected.resize(count * size);
    for (const Offsets &offsets : kOffsets) {
      if (options.quick && (&offsets - kOffsets) % 2 == 1) continue;
      // Inputs as they will be read, placed once for every op and k (in place rewrites
      // srcs[0]'s slot, so it is placed again before each case).
      const size_t used = 2 * kGuard + kSlack + count * size;  // of a slot
      auto place_input = [&](int k) {
        CUDA_CHECK(cudaMemset(arena.slot(k), kPoison, used));
        CUDA_CHECK(cudaMemcpy(arena.slot(k) + kGuard + offsets.src[k], inputs[k].data(),
                              count * size, cudaMemcpyHostToDevice));
      };
      for (int k = 0; k < kMaxReduceInputs; ++k) place_input(k);
      for (RedOp op : ops) {
        for (int nsrcs : knums) {
          ReduceArgs args;
          args.nsrcs = nsrcs;
          args.count = count;
          args.dtype = dtype;
          args.op = op;
          args.avg_divisor = nsrcs == 1 ? 3 : nsrcs;  // one input: the final division alone
          args.shape = shape_for(tally->cases);
          const void *host_ins[kMaxReduceInputs];
          for (int k = 0; k < nsrcs; ++k) {
            args.srcs[k] = arena.slot(k) + kGuard + offsets.src[k];
            host_ins[k] = inputs[k].data();
          }
          const int dst_slot = offsets.in_place ? 0 : out_slot;
          const size_t dst_begin = kGuard + (offsets.in_place ? offsets.src[0] : offsets.dst);
          if (offsets.in_place) {
            place_input(0);
          } else {
            CUDA_CHECK(cudaMemset(arena.slot(out_slot), kPoison, used));
          }
          args.dst = arena.slot(dst_slot) + dst_begin;
          ++tally->cases;
          const std::string what = describe(dtype, op, nsrcs, count, offsets, args.shape);
          cudaError_t err = cohort::kernels::launch_reduce(args, nullptr);
          if (err == cudaSuccess) err = cudaDeviceSynchronize();
          if (err != cudaSuccess) {
            tally->fail(what + ": " + cudaGetErrorString(err));
            if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
              std::exit(1);  // the context is gone: nothing after this would run
            }
            continue;
          }
          with_ref(dtype, [&](auto ref) {
            reference<decltype(ref)>(expected.data(), host_ins, nsrcs, count, op, args.avg_divisor);
          });
          // In place, the guards are those of srcs[0]'s slot: poison too.
          std::string diff =
              check_output(dtype, arena.slot(dst_slot) + dst_begin, expected.data(), count);
          if (!diff.empty()) tally->fail(what + ": " + diff);
        }
      }
    }
  }
  std::printf("%-6s reduce: %ld cases, %ld failed\n", kDtypeNames[static_cast<int>(dtype)],
              tally->cases - cases_before, tally->failures - before);
}

// launch_copy at every pair of byte offsets modulo 16.
void run_copy_cases(const Options &options, const Arena &arena, Tally *tally) {
  const std::vector<size_t> sizes =
      options.quick ? std::vector<size_t>{0, 1, 15, 17, 512, 1023}
                    : std::vector<size_t>{0, 1, 15, 16, 17, 511, 512, 1023, 65537, (1u << 20) + 3};
  std::vector<unsigned char> data(arena.slot_bytes);
  std::mt19937_64 rng(7);
  for (auto &b : data) b = static_cast<unsigned char>(rng());
  long before = tally->failures, cases_before = tally->cases;
  CUDA_CHECK(cudaMemcpy(arena.slot(0), data.data(), arena.slot_bytes, cudaMemcpyHostToDevice));
  for (size_t bytes : sizes) {
    for (size_t dst_off = 0; dst_off < 16; ++dst_off) {
      for (size_t src_off = 0; src_off < 16; ++src_off) {
        if (options.quick && (dst_off % 5 != 0 || src_off % 3 != 0)) continue;
        CUDA_CHECK(cudaMemset(arena.slot(1), kPoison, 2 * kGuard + kSlack + bytes));
        CopyArgs args;
        args.dst = arena.slot(1) + kGuard + dst_off;
        args.src = arena.slot(0) + kGuard + src_off;
        args.bytes = bytes;
        args.shape = shape_for(tally->cases);
        ++tally->cases;
        char what[128];
        std::snprintf(what, sizeof what, "copy bytes=%zu dst+%zu src+%zu grid=%dx%d", bytes,
                      dst_off, src_off, args.shape.blocks, args.shape.threads);
        cudaError_t err = cohort::kernels::launch_copy(args, nullptr);
        if (err == cudaSuccess) err = cudaDeviceSynchronize();
        if (err != cudaSuccess) {
          tally->fail(std::string(what) + ": " + cudaGetErrorString(err));
          std::exit(1);
        }
        std::string diff = check_output(DType::kUint8, arena.slot(1) + kGuard + dst_off,
                                        data.data() + kGuard + src_off, bytes);
        if (!diff.empty()) tally->fail(std::string(what) + ": " + diff);
      }
    }
  }
  std::printf("%-6s copy:   %ld cases, %ld failed\n", "bytes", tally->cases - cases_before,
              tally->failures - before);
}

// Arguments outside the contract launch nothing and say cudaErrorInvalidValue; count 0 is a
// success with any pointers.
void run_argument_checks(const Arena &arena, Tally *tally) {
  auto expect = [&](const char *what, cudaError_t got, cudaError_t want) {
    ++tally->cases;
    if (got != want) tally->fail(std::string("arguments: ") + what + ": " + cudaGetErrorName(got));
  };
  ReduceArgs good;
  good.dst = arena.slot(kMaxReduceInputs);
  good.srcs[0] = arena.slot(0);
  good.srcs[1] = arena.slot(1);
  good.nsrcs = 2;
  good.count = 16;
  expect("valid", cohort::kernels::launch_reduce(good, nullptr), cudaSuccess);
  ReduceArgs a = good;
  a.nsrcs = 0;
  expect("nsrcs 0", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.nsrcs = kMaxReduceInputs + 1;
  expect("nsrcs 9", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.dtype = static_cast<DType>(99);
  expect("dtype 99", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.op = static_cast<RedOp>(-1);
  expect("op -1", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.op = RedOp::kAvg;
  a.avg_divisor = 0;
  expect("avg divisor 0", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.shape.threads = 48;
  expect("48 threads", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.shape.threads = 1024;
  expect("1024 threads", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.srcs[1] = nullptr;
  expect("null input", cohort::kernels::launch_reduce(a, nullptr), cudaErrorInvalidValue);
  a = good;
  a.count = SIZE_MAX / 2;
  a.dtype = DType::kFloat32;
  expect("count overflowing bytes", cohort::kernels::launch_reduce(a, nullptr),
         cudaErrorInvalidValue);
  a = ReduceArgs{};
  a.nsrcs = 3;
  expect("count 0, null pointers", cohort::kernels::launch_reduce(a, nullptr), cudaSuccess);
  CopyArgs c;
  c.bytes = 5;
  expect("copy null", cohort::kernels::launch_copy(c, nullptr), cudaErrorInvalidValue);
  c.bytes = 0;
  expect("copy 0 bytes, null", cohort::kernels::launch_copy(c, nullptr), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
}

int parse(int argc, char **argv, Options *options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      options->quick = true;
    } else if (arg == "--dtype" && i + 1 < argc) {
      std::string name = argv[++i];
      for (int d = 0; d < cohort::kernels::kNumDTypes; ++d) {
        if (name == kDtypeNames[d]) options->only_dtype = d;
      }
      if (options->only_dtype < 0) {
        std::fprintf(stderr, "kernel_test: unknown dtype '%s'\n", name.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: kernel_test [--quick] [--dtype NAME]\n");
      return 2;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  Options options;
  if (int rc = parse(argc, argv, &options)) return rc;
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found 0");
    return 77;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("kernel_test on %s (sm_%d%d)%s\n", prop.name, prop.major, prop.minor,
              options.quick ? ", quick" : "");

  const size_t max_count = options.quick ? 1023 : (1u << 20);  // elements of reduce cases
  Arena arena;  // also holds the largest copy case, (1 << 20) + 3 bytes
  arena.slot_bytes = (max_count * 8 + 2 * kGuard + kSlack + 255) / 256 * 256;
  arena.device = device_alloc(arena.slot_bytes * (kMaxReduceInputs + 1));

  Tally tally;
  run_argument_checks(arena, &tally);
  run_copy_cases(options, arena, &tally);
  std::mt19937_64 rng(20240601);
  for (int d = 0; d < cohort::kernels::kNumDTypes; ++d) {
    if (options.only_dtype >= 0 && d != options.only_dtype) continue;
    const DType dtype = static_cast<DType>(d);
    std::vector<std::vector<unsigned char>> inputs(kMaxReduceInputs);
    for (auto &input : inputs) {
      input.resize(max_count * cohort::kernels::dtype_size(dtype));
      fill_inputs(dtype, rng, input.data(), max_count);
    }
    run_reduce_cases(dtype, options, arena, inputs, &tally);
  }
  CUDA_CHECK(cudaFree(arena.device));
  std::printf("kernel_test: %ld cases, %ld failed\n", tally.cases, tally.failures);
  return tally.failures == 0 ? 0 : 1;
}
