// Lines (ll_line.h) in device code: one 16-byte store puts a line down, one 16-byte load takes
// it, and the payload moves between lines and device buffers of any alignment.  Shared by the
// staged piece kernel (staged.cu, lines through host memory) and the LL allreduce between the
// local ranks of a team (allreduce.cuh).  Device code only; the CPU emulation (test/gpu/emul)
// stores and loads each half as an atomic.
#pragma once

#ifdef COHORT_KERNELS_EMULATION
#include <atomic>
#endif
#include <cstddef>
#include <cstdint>

#include "ll_line.h"

namespace cohort::kernels {

// One line in one 16-byte store (the GPU's own atomicity for an aligned vector store; each half
// carries its flag, so a reader that sees a half's flag has that half's data).
__device__ inline void store_line(LlLine *line, uint32_t d0, uint32_t d1, uint32_t flag) {
#ifdef COHORT_KERNELS_EMULATION
  std::atomic_ref<uint64_t>(line->half[0]).store(ll_half(d0, flag), std::memory_order_release);
  std::atomic_ref<uint64_t>(line->half[1]).store(ll_half(d1, flag), std::memory_order_release);
#else
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(d0), "r"(flag),
               "r"(d1), "r"(flag)
               : "memory");
#endif
}

__device__ inline LlLine load_line(const LlLine *line) {
  LlLine v;
#ifdef COHORT_KERNELS_EMULATION
  for (int i = 0; i < 2; ++i) {
    v.half[i] = std::atomic_ref<uint64_t>(const_cast<LlLine *>(line)->half[i])
                    .load(std::memory_order_acquire);
  }
#else
  uint32_t d0, f0, d1, f1;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
               : "l"(line)
               : "memory");
  v.half[0] = ll_half(d0, f0);
  v.half[1] = ll_half(d1, f1);
#endif
  return v;
}

// Both halves of `v` carry `flag`.
__device__ __forceinline__ bool line_is(const LlLine &v, uint32_t flag) {
  return ll_flag(v.half[0]) == flag && ll_flag(v.half[1]) == flag;
}

// Line i's payload from `bytes` bytes of device memory at `src`: one 8-byte load where the
// line is whole and aligned, its bytes one by one otherwise (little-endian, zeros past the end).
__device__ inline void line_payload(const unsigned char *src, size_t bytes, size_t i, uint32_t *d0,
                                    uint32_t *d1) {
  const size_t at = i * kLlPayload;
  if (at + kLlPayload <= bytes && reinterpret_cast<uintptr_t>(src + at) % 8 == 0) {
    const uint2 v = *reinterpret_cast<const uint2 *>(src + at);
    *d0 = v.x;
    *d1 = v.y;
    return;
  }
  uint32_t w[2] = {0, 0};
  for (size_t k = 0; k < kLlPayload && at + k < bytes; ++k) {
    w[k / 4] |= static_cast<uint32_t>(src[at + k]) << (8 * (k % 4));
  }
  *d0 = w[0];
  *d1 = w[1];
}

// The reverse, into device memory: the part of line i inside `bytes`.
__device__ inline void put_payload(uint32_t d0, uint32_t d1, size_t i, unsigned char *dst,
                                   size_t bytes) {
  const size_t at = i * kLlPayload;
  if (at + kLlPayload <= bytes && reinterpret_cast<uintptr_t>(dst + at) % 8 == 0) {
    uint2 v;
    v.x = d0;
    v.y = d1;
    *reinterpret_cast<uint2 *>(dst + at) = v;
    return;
  }
  const uint32_t w[2] = {d0, d1};
  for (size_t k = 0; k < kLlPayload && at + k < bytes; ++k) {
    dst[at + k] = static_cast<unsigned char>(w[k / 4] >> (8 * (k % 4)));
  }
}

}  // namespace cohort::kernels
