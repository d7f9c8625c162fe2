// Bandwidth of the copy and reduce kernels against the device's own copy (cudaMemcpy D2D), in
// one run: the yardstick is that c = a + b for fp32 and bf16 reaches >= 97% of the copy's
// bandwidth, aligned and with every pointer misaligned by 4 bytes.
//
// usage: kernel_bench [--bytes N] [--reps N] [--blocks N] [--threads N] [--target-only]
//   --bytes    size of each buffer (default 1 GiB); k inputs and one output are allocated
//   --reps     timed repetitions per row (default 25, after 3 warm-ups); the median is shown
//   --blocks, --threads   the kernels' grid (default: the launcher's choice)
//   --target-only   only the rows of the yardstick (and the copy kernel's)
// The last line says whether the yardstick is met: c = a + b, fp32 and bf16, aligned and +4.
// Bytes moved count every byte read and written: 2 x size for a copy, (k + 1) x size for a
// k-input reduction.  Each row's output is spot-checked against the host after timing.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/reduce.h"
#include "coll/half.h"

namespace {

using cohort::kernels::DType;
using cohort::kernels::kMaxReduceInputs;
using cohort::kernels::LaunchShape;
using cohort::kernels::RedOp;
using cohort::kernels::ReduceArgs;

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

struct Options {
  size_t bytes = size_t{1} << 30;
  int reps = 25;
  LaunchShape shape;
  bool target_only = false;
};

constexpr int kWarmups = 3;
constexpr size_t kSlack = 256;  // past each buffer's end, for the misaligned rows

// Median time in ms of `reps` runs of `run`, each between its own pair of events.
double median_ms(const Options &options, const std::function<void()> &run) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmups; ++i) run();
  std::vector<double> times;
  for (int i = 0; i < options.reps; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    run();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Random finite values: fp32 in +-[2^-4, 2^4) built from random bits (a xorshift keeps 1 GiB
// quick to fill), bf16 the same rounded.
void fill(DType dtype, std::vector<unsigned char> *host, uint64_t seed) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  auto value = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const uint32_t bits = static_cast<uint32_t>(state >> 63) << 31 |
                          static_cast<uint32_t>(123 + (state >> 24) % 8) << 23 |
                          static_cast<uint32_t>(state & 0x7fffff);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  if (dtype == DType::kFloat32) {
    auto *f = reinterpret_cast<float *>(host->data());
    for (size_t i = 0; i < host->size() / 4; ++i) f[i] = value();
  } else {
    auto *h = reinterpret_cast<uint16_t *>(host->data());
    for (size_t i = 0; i < host->size() / 2; ++i) h[i] = cohort::coll::float_to_bf16(value());
  }
}

// Two sets of values alternate among the inputs (filling 1 GiB takes a second or two).
constexpr int kValueSets = 2;

struct Buffers {
  unsigned char *in[kMaxReduceInputs] = {};
  unsigned char *out = nullptr;
  std::vector<unsigned char> host[kValueSets];  // in[k] holds host[k % kValueSets]
};

struct Table {
  double copy_gbs = 0;
  // Prints a row; returns its bandwidth in percent of the first row's.
  double row(const char *name, size_t moved, double ms) {
    double gbs = static_cast<double>(moved) / (ms * 1e-3) / 1e9;
    if (copy_gbs == 0) copy_gbs = gbs;
    std::printf("%-34s %14zu %11.1f %9.1f %8.1f%%\n", name, moved, ms * 1e3, gbs,
                100.0 * gbs / copy_gbs);
    std::fflush(stdout);
    return 100.0 * gbs / copy_gbs;
  }
};

// The yardstick: c = a + b at >= 97% of cudaMemcpy D2D, for each of these rows.
constexpr double kTargetPercent = 97.0;

// Compares a few thousand elements of the output (start, middle, end) with the host's sum of
// the inputs, in the order the kernel adds them (fp32 for both dtypes, bf16 rounded once).
// Offsets are in bytes from the buffers' starts.
bool spot_check(DType dtype, const Buffers &buffers, size_t dst_offset, size_t src_offset,
                int nsrcs, size_t count) {
  const size_t size = dtype == DType::kFloat32 ? 4 : 2;
  const size_t window = std::min<size_t>(count, 1024);
  const size_t starts[] = {0, count / 2 - window / 2, count - window};
  std::vector<unsigned char> got(window * size);
  for (size_t start : starts) {
    CUDA_CHECK(cudaMemcpy(got.data(), buffers.out + dst_offset + start * size, got.size(),
                          cudaMemcpyDeviceToHost));
    for (size_t i = start; i < start + window; ++i) {
      float acc = 0;
      for (int k = 0; k < nsrcs; ++k) {
        const unsigned char *p = buffers.host[k % kValueSets].data() + src_offset + i * size;
        float v;
        if (dtype == DType::kFloat32) {
          std::memcpy(&v, p, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, p, 2);
          v = cohort::coll::bf16_to_float(h);
        }
        acc = k == 0 ? v : acc + v;
      }
      bool ok;
      if (dtype == DType::kFloat32) {
        ok = std::memcmp(&acc, got.data() + (i - start) * 4, 4) == 0;
      } else {
        uint16_t want = cohort::coll::float_to_bf16(acc), have;
        std::memcpy(&have, got.data() + (i - start) * 2, 2);
        ok = want == have;
      }
      if (!ok) {
        std::printf("WRONG RESULT at element %zu: the row above measured a broken kernel\n", i);
        return false;
      }
    }
  }
  return true;
}

int parse(int argc, char **argv, Options *options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--target-only") {
      options->target_only = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: kernel_bench [--bytes N] [--reps N] [--blocks N] [--threads N] "
                   "[--target-only]\n");
      return 2;
    }
    long long value = std::atoll(argv[++i]);
    if (arg == "--bytes" && value >= 4096)
      options->bytes = static_cast<size_t>(value) / 16 * 16;
    else if (arg == "--reps" && value >= 1)
      options->reps = static_cast<int>(value);
    else if (arg == "--blocks" && value >= 0)
      options->shape.blocks = static_cast<int>(value);
    else if (arg == "--threads" && value >= 0)
      options->shape.threads = static_cast<int>(value);
    else {
      std::fprintf(stderr, "kernel_bench: bad argument %s %s\n", arg.c_str(), argv[i]);
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
  int device = 0, sm_khz = 0, mem_khz = 0, bus_bits = 0, driver = 0, runtime = 0;
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf(
      "GPU: %s (sm_%d%d, %d SMs, SM clock %d MHz, memory clock %d MHz, %d-bit bus), "
      "driver %d, runtime %d\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, sm_khz / 1000, mem_khz / 1000,
      bus_bits, driver, runtime);
  std::printf(
      "buffers of %zu bytes; median of %d reps after %d warm-ups; grid %s\n\n", options.bytes,
      options.reps, kWarmups,
      options.shape.blocks || options.shape.threads
          ? (std::to_string(options.shape.blocks) + "x" + std::to_string(options.shape.threads))
                .c_str()
          : "chosen by the launcher");

  const size_t size = options.bytes;
  Buffers buffers;
  for (auto &in : buffers.in) in = device_alloc(size + kSlack);
  buffers.out = device_alloc(size + kSlack);

  std::printf("%-34s %14s %11s %9s %9s\n", "row", "bytes moved", "median us", "GB/s", "of D2D");
  Table table;
  bool all_ok = true;
  double target[2][2] = {};  // [fp32, bf16][aligned, +4]: percent of D2D

  // The yardstick first: the row every other is a fraction of.
  buffers.host[0].resize(size);
  fill(DType::kFloat32, &buffers.host[0], 1);
  CUDA_CHECK(cudaMemcpy(buffers.in[0], buffers.host[0].data(), size, cudaMemcpyHostToDevice));
  table.row(
      "cudaMemcpy D2D", 2 * size, median_ms(options, [&] {
        CUDA_CHECK(cudaMemcpyAsync(buffers.out, buffers.in[0], size, cudaMemcpyDeviceToDevice));
      }));

  for (size_t offset : {size_t{0}, size_t{4}}) {
    std::string name = std::string("copy kernel") + (offset ? " +4" : "");
    table.row(name.c_str(), 2 * size, median_ms(options, [&] {
                cohort::kernels::CopyArgs args;
                args.dst = buffers.out + offset;
                args.src = buffers.in[0] + offset;
                args.bytes = size;
                args.shape = options.shape;
                CUDA_CHECK(cohort::kernels::launch_copy(args, nullptr));
              }));
  }

  for (DType dtype : {DType::kFloat32, DType::kBfloat16}) {
    const char *type = dtype == DType::kFloat32 ? "fp32" : "bf16";
    const size_t count = size / (dtype == DType::kFloat32 ? 4 : 2);
    for (int set = 0; set < kValueSets; ++set) {
      buffers.host[set].resize(size);
      fill(dtype, &buffers.host[set], 100 + set);
    }
    const int ninputs = options.target_only ? 2 : kMaxReduceInputs;
    for (int k = 0; k < ninputs; ++k) {
      CUDA_CHECK(cudaMemcpy(buffers.in[k], buffers.host[k % kValueSets].data(), size,
                            cudaMemcpyHostToDevice));
    }
    struct Layout {
      const char *name;
      size_t dst, src;
    };
    auto run_sum = [&](int nsrcs, const Layout &layout, const std::string &name) -> double {
      ReduceArgs args;
      args.dst = buffers.out + layout.dst;
      for (int k = 0; k < nsrcs; ++k) args.srcs[k] = buffers.in[k] + layout.src;
      args.nsrcs = nsrcs;
      args.count = count - 4;  // room for the offsets within the data filled
      args.dtype = dtype;
      args.op = RedOp::kSum;
      args.shape = options.shape;
      const double percent = table.row(
          name.c_str(), (nsrcs + 1) * args.count * (size / count),
          median_ms(options, [&] { CUDA_CHECK(cohort::kernels::launch_reduce(args, nullptr)); }));
      all_ok &= spot_check(dtype, buffers, layout.dst, layout.src, nsrcs, args.count);
      return percent;
    };
    const Layout kLayouts[] = {{"", 0, 0}, {" +4", 4, 4}, {" dst+0 srcs+4", 0, 4}};
    for (int l = 0; l < (options.target_only ? 2 : 3); ++l) {
      const double percent =
          run_sum(2, kLayouts[l], std::string(type) + " c = a + b" + kLayouts[l].name);
      if (l < 2) target[dtype == DType::kFloat32 ? 0 : 1][l] = percent;
    }
    for (int k = 3; k <= (options.target_only ? 2 : kMaxReduceInputs); ++k) {
      run_sum(k, kLayouts[0], std::string(type) + " sum of " + std::to_string(k) + " inputs");
    }
  }
  const bool met = target[0][0] >= kTargetPercent && target[0][1] >= kTargetPercent &&
                   target[1][0] >= kTargetPercent && target[1][1] >= kTargetPercent;
  std::printf(
      "\ntarget: fp32 aligned %.1f%%, fp32 +4 %.1f%%, bf16 aligned %.1f%%, bf16 +4 %.1f%% "
      "(>= %.0f%% each: %s)\n",
      target[0][0], target[0][1], target[1][0], target[1][1], kTargetPercent,
      met ? "PASS" : "FAIL");
  for (auto *in : buffers.in) CUDA_CHECK(cudaFree(in));
  CUDA_CHECK(cudaFree(buffers.out));
  return all_ok ? 0 : 1;
}
