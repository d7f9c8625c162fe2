// The staged piece kernel (src/kernels/staged.h) against a host thread that plays the host's
// collective: it waits for the kernel's ready word, checks the input the kernel copied into
// the slot, writes an output there and then the done word; the kernel must then have copied
// that output, and nothing around it, into device memory, and then written the finished word. Also:
// it waits while done is behind the piece in cyclic order (so a plain >= compare fails the test),
// and it gives up past give_up_ns, writing nothing.
// The same as lines (kernels/ll_line.h): the host thread waits for every input line to carry the
// piece, checks them and that no line past them was written, then writes the output lines and
// done; the kernel must take exactly that output (not a line left flagged by the piece before)
// and zero the lines.  A done that reached the piece while the lines are another piece's (a
// later piece's end wrote over them) ends the kernel without output; so does giving up.
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
  uint8_t *device = nullptr;                 // the call's buffer: input, then output at an offset
  uint8_t *slot = nullptr;                   // page-locked, mapped
  uint32_t *words = nullptr;                 // ready at 0, done at 32, finished at 64
  cohort::kernels::LlLine *lines = nullptr;  // page-locked, mapped: kLlMaxLines in, then out
  bool ok() const {
    return device != nullptr && slot != nullptr && words != nullptr && lines != nullptr;
  }
};

// The output region of the call's buffer, after the input's.
constexpr size_t kOutAt = kMost + 2 * kGuard;

// The call's buffer: the piece's input at in_off, kUntouched everywhere else.
void fill_device(const Buffers &b, size_t bytes, size_t in_off, uint32_t piece) {
  std::vector<uint8_t> host(2 * kMost + 4 * kGuard, kUntouched);
  for (size_t i = 0; i < bytes; ++i) host[in_off + i] = in_byte(i, piece);
  cudaMemcpy(b.device, host.data(), host.size(), cudaMemcpyHostToDevice);
}

// Launches the kernel (cooperatively on the emulation, where the host thread plays along),
// waits for it, then for the host thread.
cudaError_t run_kernel(const StagedPieceArgs &a, std::thread &host_side) {
#ifdef COHORT_KERNELS_EMULATION
  cohort_emul::set_launch_mode(cohort_emul::LaunchMode::kCooperative);
#endif
  cudaError_t err = cohort::kernels::launch_staged_piece(a, nullptr);
  if (err == cudaSuccess) err = cudaStreamSynchronize(nullptr);
  host_side.join();
  return err;
}

// The output at out_off in the call's buffer: *wrong bytes of it differ from the piece's
// output (when `written`), *outside bytes around it (or in it, when not `written`) were touched.
void check_output(const Buffers &b, size_t bytes, size_t out_off, uint32_t piece, bool written,
                  size_t *wrong, size_t *outside) {
  std::vector<uint8_t> host(2 * kMost + 4 * kGuard);
  cudaMemcpy(host.data(), b.device, host.size(), cudaMemcpyDeviceToHost);
  *wrong = *outside = 0;
  for (size_t i = 0; i < bytes + 2 * kGuard; ++i) {
    const uint8_t got = host[kOutAt + out_off + i];
    const bool inside = i >= kGuard && i < kGuard + bytes;
    if (inside && written) *wrong += got != out_byte(i - kGuard, piece);
    if (!inside || !written) *outside += got != kUntouched;
  }
}

// One case: `bytes` in from device + in_off to slot + 64, out from slot + 64 + kMost to
// device + out_off.  `done_before` is the done word when the kernel starts; the host thread
// writes the piece into it once it checked the input (or never, with `give_up`).
void run_case(const Buffers &b, size_t bytes, size_t in_off, size_t out_off, uint32_t piece,
              uint32_t done_before, bool give_up) {
  fill_device(b, bytes, in_off, piece);
  std::memset(b.slot, 0, 2 * kMost + 256);
  store(b.words, piece - 1);
  store(b.words + 32, done_before);
  store(b.words + 64, piece - 1);

  StagedPieceArgs a;
  a.in_src = b.device + in_off;
  a.in_dst = b.slot + 64;
  a.in_bytes = bytes;
  a.out_src = b.slot + 64 + kMost;
  a.out_dst = b.device + kOutAt + kGuard + out_off;
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
  const cudaError_t err = run_kernel(a, host_side);
  EXPECT(err == cudaSuccess, "launch: %s", cudaGetErrorName(err));
  EXPECT(announced.load(), "the kernel never wrote ready (piece %u)", piece);
  EXPECT(load(b.words + 64) == (give_up ? piece - 1 : piece), "finished is %u (piece %u%s)",
         load(b.words + 64), piece, give_up ? ", giving up" : "");

  size_t wrong = 0, outside = 0;
  check_output(b, bytes, out_off, piece, !give_up, &wrong, &outside);
  EXPECT(wrong == 0 && outside == 0,
         "%zu bytes: %zu output bytes wrong, %zu bytes written outside it (in_off %zu, out_off "
         "%zu, piece %u, done before %u%s)",
         bytes, wrong, outside, in_off, out_off, piece, done_before, give_up ? ", giving up" : "");
}

// ------------------------------------------------------------------ lines

using cohort::kernels::kLlMaxLines;
using cohort::kernels::ll_flag;
using cohort::kernels::ll_half;
using cohort::kernels::ll_lines;
using cohort::kernels::LlLine;

uint64_t load_half(LlLine *line, int i) {
  return std::atomic_ref<uint64_t>(line->half[i]).load(std::memory_order_acquire);
}
void store_half(LlLine *line, int i, uint64_t value) {
  std::atomic_ref<uint64_t>(line->half[i]).store(value, std::memory_order_release);
}
bool carries(LlLine *line, uint32_t flag) {
  return ll_flag(load_half(line, 0)) == flag && ll_flag(load_half(line, 1)) == flag;
}

enum class LinesMode { kNormal, kOverwritten, kGiveUp };

// `bytes` in from device + in_off as lines, out from lines to device + out_off.  The output
// lines start flagged with the piece before (and garbage), which the kernel must not take.
void run_lines_case(const Buffers &b, size_t bytes, size_t in_off, size_t out_off, uint32_t piece,
                    LinesMode mode) {
  fill_device(b, bytes, in_off, piece);
  LlLine *in = b.lines;
  LlLine *out = b.lines + kLlMaxLines;
  const size_t lines = ll_lines(bytes);
  for (size_t i = 0; i < kLlMaxLines; ++i) {
    store_half(in + i, 0, ll_half(0xdead, piece + 7));  // no piece's: must be written over
    store_half(in + i, 1, ll_half(0xbeef, piece + 7));
    store_half(out + i, 0, ll_half(0x5a5a5a5a, piece - 1));
    store_half(out + i, 1, ll_half(0x5a5a5a5a, piece - 1));
  }
  store(b.words + 32, piece - 1);
  store(b.words + 64, piece - 1);

  StagedPieceArgs a;
  a.in_src = b.device + in_off;
  a.in_bytes = bytes;
  a.out_dst = b.device + kOutAt + kGuard + out_off;
  a.out_bytes = bytes;
  a.done = b.words + 32;
  a.piece = piece;
  a.finished = b.words + 64;
  a.ll_in = in;
  a.ll_out = out;
  a.give_up_ns = mode == LinesMode::kGiveUp ? 50'000'000ull : 20'000'000'000ull;

  std::atomic<bool> announced{false};
  std::thread host_side([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    size_t landed = 0;
    while (landed < lines && std::chrono::steady_clock::now() < deadline) {
      if (carries(in + landed, piece)) {
        ++landed;
      } else {
        std::this_thread::yield();
      }
    }
    announced = landed == lines;
    if (!announced || mode == LinesMode::kGiveUp) return;
    // Every line whole: the payload, then zeros to the line's end.
    std::vector<uint8_t> got(lines * 8, kUntouched);
    for (size_t i = 0; i < lines; ++i) {
      cohort::kernels::ll_unpayload(static_cast<uint32_t>(load_half(in + i, 0)),
                                    static_cast<uint32_t>(load_half(in + i, 1)), i, got.data(),
                                    got.size());
    }
    size_t wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != (i < bytes ? in_byte(i, piece) : 0);
    EXPECT(wrong == 0, "%zu of %zu input bytes (and padding) wrong in the lines (in_off %zu)",
           wrong, bytes, in_off);
    EXPECT(lines == kLlMaxLines || carries(in + lines, piece + 7),
           "a line past the input's %zu was written (%zu bytes)", lines, bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a kernel that ran ahead shows
    const uint32_t flag = mode == LinesMode::kOverwritten ? piece + 1 : piece;
    std::vector<uint8_t> output(bytes);
    for (size_t i = 0; i < bytes; ++i) output[i] = out_byte(i, piece);
    for (size_t i = 0; i < lines; ++i) {
      uint32_t d0, d1;
      cohort::kernels::ll_payload(output.data(), bytes, i, &d0, &d1);
      store_half(out + i, 0, ll_half(d0, flag));
      store_half(out + i, 1, ll_half(d1, flag));
    }
    store(b.words + 32, flag);
  });
  const cudaError_t err = run_kernel(a, host_side);
  const bool written = mode == LinesMode::kNormal;
  const char *what = mode == LinesMode::kNormal        ? ""
                     : mode == LinesMode::kOverwritten ? ", lines overwritten"
                                                       : ", giving up";
  EXPECT(err == cudaSuccess, "launch: %s", cudaGetErrorName(err));
  EXPECT(announced.load(), "the kernel never wrote its input lines (piece %u)", piece);
  EXPECT(load(b.words + 64) == (written ? piece : piece - 1), "finished is %u (piece %u%s)",
         load(b.words + 64), piece, what);
  size_t kept = 0;  // lines the kernel should have zeroed once taken
  for (size_t i = 0; i < lines && written; ++i) {
    kept += load_half(out + i, 0) != 0 || load_half(out + i, 1) != 0;
  }
  EXPECT(kept == 0, "%zu of %zu output lines not zeroed once taken", kept, lines);

  size_t wrong = 0, outside = 0;
  check_output(b, bytes, out_off, piece, written, &wrong, &outside);
  EXPECT(wrong == 0 && outside == 0,
         "lines, %zu bytes: %zu output bytes wrong, %zu bytes written outside it (in_off %zu, "
         "out_off %zu, piece %u%s)",
         bytes, wrong, outside, in_off, out_off, piece, what);
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
  cudaHostAlloc(reinterpret_cast<void **>(&b.lines), 2 * kLlMaxLines * sizeof(LlLine),
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
  const size_t line_sizes[] = {0, 1, 3, 8, 17, 100, 4095, 4096};
  for (size_t bytes : line_sizes) {
    for (const auto &off : offsets) {
      run_lines_case(b, bytes, off[0], off[1], piece++, LinesMode::kNormal);
      ++cases;
    }
  }
  run_lines_case(b, 100, 0, 0, 0xFFFFFFFFu, LinesMode::kNormal);  // the piece before is 0xFFFFFFFE
  run_lines_case(b, 100, 3, 5, 60, LinesMode::kOverwritten);
  run_lines_case(b, 8, 0, 0, 61, LinesMode::kGiveUp);
  cases += 3;
  cudaFree(b.device);
  cudaFreeHost(b.slot);
  cudaFreeHost(b.words);
  cudaFreeHost(b.lines);
  std::printf("staged_test: %d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
