// The staged piece kernel (src/kernels/staged.h) against a host thread that plays the host's
// collective: it waits for the kernel's ready word, checks the input the kernel copied into
// the slot, writes an output there and then the done word; the kernel must then have copied
// that output, and nothing around it, into device memory, and then written the finished word. Also:
// it waits while done is behind the piece in cyclic order (so a plain >= compare fails the test),
// and it gives up past give_up_ns, writing nothing.
//
// Built twice: staged_emul_test on the CPU emulation of the kernels (make check anywhere), and
// staged_test on a GPU (skips with 77 without one).
// usage: staged_test
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/staged.h"
#ifdef COHORT_KERNELS_EMULATION
#include "cooperative.h"
#endif

namespace {

using cohort::kernels::StagedPieceArgs;
constexpr size_t kMost = 65536 + 64;  // the largest case and its offsets
constexpr size_t kGuard = 32;         // bytes checked untouched on each side of the output
constexpr uint8_t kUntouched = 0xA5;

int failures = 0;

#define EXPECT(cond, ...)                       \
  do {                                          \
    if (!(cond)) {                              \
      ++failures;                               \
      std::fprintf(stderr, "FAIL %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);        \
      std::fprintf(stderr, "\n");               \
    }                                           \
  } while (0)

uint8_t in_byte(size_t i, uint32_t piece) { return static_cast<uint8_t>(i * 7 + piece); }
uint8_t out_byte(size_t i, uint32_t piece) { return static_cast<uint8_t>(i * 13 + piece + 101); }

uint32_t load(uint32_t *word) {
  return std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire);
}
void store(uint32_t *word, uint32_t value) {
  std::atomic_ref<uint32_t>(*word).store(value, std::memory_order_release);
}

struct Buffers {
  uint8_t *device = nullptr;  // the call's buffer: input, then output at an offset
  uint8_t *slot = nullptr;    // page-locked, mapped
  uint32_t *words = nullptr;  // ready at 0, done at 32, finished at 64
  bool ok() const { return device != nullptr && slot != nullptr && words != nullptr; }
};

// One case: `bytes` in from device + in_off to slot + 64, out from slot + 64 + kMost to
// device + out_off.  `done_before` is the done word when the kernel starts; the host thread
// writes the piece into it once it checked the input (or never, with `give_up`).
void run_case(const Buffers &b, size_t bytes, size_t in_off, size_t out_off, uint32_t piece,
              uint32_t done_before, bool give_up) {
  const size_t out_at = kMost + 2 * kGuard;  // the output region, after the input's
  std::vector<uint8_t> host(2 * kMost + 4 * kGuard, kUntouched);
  for (size_t i = 0; i < bytes; ++i) host[in_off + i] = in_byte(i, piece);
  cudaMemcpy(b.device, host.data(), host.size(), cudaMemcpyHostToDevice);
  std::memset(b.slot, 0, 2 * kMost + 256);
  store(b.words, piece - 1);
  store(b.words + 32, done_before);
  store(b.words + 64, piece - 1);

  StagedPieceArgs a;
  a.in_src = b.device + in_off;
  a.in_dst = b.slot + 64;
  a.in_bytes = bytes;
  a.out_src = b.slot + 64 + kMost;
  a.out_dst = b.device + out_at + kGuard + out_off;
  a.out_bytes = bytes;
  a.ready = b.words;
  a.done = b.words + 32;
  a.piece = piece;
  a.finished = b.words + 64;
  a.give_up_ns = give_up ? 50'000'000ull : 20'000'000'000ull;

  std::atomic<bool> announced{false};
  std::thread host_side([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (load(b.words) != piece && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    announced = load(b.words) == piece;
    if (!announced || give_up) return;
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += b.slot[64 + i] != in_byte(i, piece);
    EXPECT(wrong == 0, "%zu of %zu input bytes wrong in the slot (in_off %zu)", wrong, bytes,
           in_off);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a kernel that ran ahead shows
    for (size_t i = 0; i < bytes; ++i) b.slot[64 + kMost + i] = out_byte(i, piece);
    store(b.words + 32, piece);
  });
#ifdef COHORT_KERNELS_EMULATION
  cohort_emul::set_launch_mode(cohort_emul::LaunchMode::kCooperative);
#endif
  cudaError_t err = cohort::kernels::launch_staged_piece(a, nullptr);
  if (err == cudaSuccess) err = cudaStreamSynchronize(nullptr);
  host_side.join();
  EXPECT(err == cudaSuccess, "launch: %s", cudaGetErrorName(err));
  EXPECT(announced.load(), "the kernel never wrote ready (piece %u)", piece);
  EXPECT(load(b.words + 64) == (give_up ? piece - 1 : piece), "finished is %u (piece %u%s)",
         load(b.words + 64), piece, give_up ? ", giving up" : "");

  cudaMemcpy(host.data(), b.device, host.size(), cudaMemcpyDeviceToHost);
  size_t wrong = 0, outside = 0;
  for (size_t i = 0; i < bytes + 2 * kGuard; ++i) {
    const uint8_t got = host[out_at + out_off + i];
    const bool inside = i >= kGuard && i < kGuard + bytes;
    if (inside && !give_up) wrong += got != out_byte(i - kGuard, piece);
    if (!inside || give_up) outside += got != kUntouched;
  }
  EXPECT(wrong == 0 && outside == 0,
         "%zu bytes: %zu output bytes wrong, %zu bytes written outside it (in_off %zu, out_off "
         "%zu, piece %u, done before %u%s)",
         bytes, wrong, outside, in_off, out_off, piece, done_before, give_up ? ", giving up" : "");
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  Buffers b;
  cudaMalloc(reinterpret_cast<void **>(&b.device), 2 * kMost + 4 * kGuard + 256);
  cudaHostAlloc(reinterpret_cast<void **>(&b.slot), 2 * kMost + 256,
                cudaHostAllocMapped | cudaHostAllocPortable);
  cudaHostAlloc(reinterpret_cast<void **>(&b.words), 128 * sizeof(uint32_t),
                cudaHostAllocMapped | cudaHostAllocPortable);
  if (!b.ok()) {
    std::fprintf(stderr, "staged_test: allocation failed\n");
    return 1;
  }
  const size_t sizes[] = {0, 1, 3, 8, 17, 100, 4096, 4099, 65536, 65536 + 5};
  const size_t offsets[][2] = {{0, 0}, {1, 0}, {0, 4}, {8, 8}, {3, 5}};
  uint32_t piece = 10;
  int cases = 0;
  for (size_t bytes : sizes) {
    for (const auto &off : offsets) {
      run_case(b, bytes, off[0], off[1], piece, piece - 1, false);
      ++piece;
      ++cases;
    }
  }
  // done ahead by 2^31 is behind in cyclic order; so is a done just below a wrapped piece.
  run_case(b, 100, 0, 0, 7, 7u + 0x80000000u, false);
  run_case(b, 100, 0, 0, 2, 0xFFFFFFF0u, false);
  run_case(b, 100, 4, 4, 0xFFFFFFFFu, 0xFFFFFFFEu, false);
  run_case(b, 100, 0, 0, 40, 39, true);  // done never comes
  cases += 4;
  cudaFree(b.device);
  cudaFreeHost(b.slot);
  cudaFreeHost(b.words);
  std::printf("staged_test: %d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
