// Lines of a small piece through host memory (staged.h, team/ll_gate.h) that carry their own
// readiness, as NCCL's LL protocol does: 8 bytes of payload per 16-byte line, each half of the
// line one 4-byte word of payload and one 4-byte flag holding the piece's number.  A writer puts
// a whole line down in one store and a reader takes a half as valid once its flag is the
// piece's: no fence between data and flag, no separate word to poll, one round trip across
// PCIe where a word and then the data took two.
//
// Flag 0 is never a piece's number (Staging::claim skips it): lines are zeroed at allocation
// and again by their reader once taken, so a line left from another piece never passes.
// Shared by the kernel (device code) and the host's side (plain C++).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cohort::kernels {

// half[i] is payload word i in its low 4 bytes and the flag in its high 4 (in memory: data0,
// flag0, data1, flag1, as the kernel stores them).
struct alignas(16) LlLine {
  uint64_t half[2];
};
static_assert(sizeof(LlLine) == 16);

constexpr uint64_t ll_half(uint32_t data, uint32_t flag) {
  return data | static_cast<uint64_t>(flag) << 32;
}
constexpr uint32_t ll_data(uint64_t half) { return static_cast<uint32_t>(half); }
constexpr uint32_t ll_flag(uint64_t half) { return static_cast<uint32_t>(half >> 32); }

constexpr size_t kLlPayload = 8;  // bytes of payload per line
// The most lines a piece takes: one per thread of the kernel's block (staged.cu checks it).
constexpr size_t kLlMaxLines = 512;
constexpr size_t kLlMaxBytes = kLlMaxLines * kLlPayload;

// Lines for `bytes` of payload: at least one, which then carries the flag alone.
constexpr size_t ll_lines(size_t bytes) {
  return bytes == 0 ? 1 : (bytes + kLlPayload - 1) / kLlPayload;
}

// Line i's payload from `bytes` bytes at `src`: little-endian words, zeros past the end.
inline void ll_payload(const void *src, size_t bytes, size_t i, uint32_t *d0, uint32_t *d1) {
  uint32_t w[2] = {0, 0};
  const size_t at = i * kLlPayload;
  if (at < bytes) {
    const size_t n = bytes - at < kLlPayload ? bytes - at : kLlPayload;
    std::memcpy(w, static_cast<const char *>(src) + at, n);
  }
  *d0 = w[0];
  *d1 = w[1];
}

// Line i's payload into `bytes` bytes at `dst` (the part that falls inside).
inline void ll_unpayload(uint32_t d0, uint32_t d1, size_t i, void *dst, size_t bytes) {
  const size_t at = i * kLlPayload;
  if (at >= bytes) return;
  const uint32_t w[2] = {d0, d1};
  const size_t n = bytes - at < kLlPayload ? bytes - at : kLlPayload;
  std::memcpy(static_cast<char *>(dst) + at, w, n);
}

}  // namespace cohort::kernels
