// The little of CUDA that src/kernels/reduce.cu uses, on the CPU: kernel_emul_test compiles
// the real launchers and primitives with g++ over these headers and runs each launch's threads
// one after another.  It checks the primitives' logic (alignment plan, pack layout, head and
// tail, in place, dtype x op semantics) where there is no GPU, e.g. in CI; it says nothing about
// the GPU's arithmetic, memory model or speed (kernel_test does, on a device).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __grid_constant__
#define __launch_bounds__(...)

// The primitives check every global access through this (impl/primitives__types.cuh): the GPU
// needs an address aligned to the access's width, x86 does not, so a misaligned access would
// pass here unnoticed and fault (or read the wrong bytes) on a device.
#define COHORT_KERNELS_EMULATION 1
inline void cohort_emul_check_aligned(const void *p, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0) {
    std::fprintf(stderr, "kernel_emul_test: %zu-byte access at misaligned address %p\n", bytes, p);
    std::abort();
  }
}

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

struct EmulDim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline EmulDim3 threadIdx, blockIdx, blockDim, gridDim;

// Correctly rounded float arithmetic: the x86-64 SSE unit, which g++ uses without contraction
// at -std=c++20.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }

// The SIMD byte intrinsics, lane by lane.
template <class Fn>
inline uint32_t emul_bytewise(uint32_t a, uint32_t b, Fn fn) {
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t lane = static_cast<uint32_t>(fn((a >> (8 * i)) & 0xffu, (b >> (8 * i)) & 0xffu));
    result |= (lane & 0xffu) << (8 * i);
  }
  return result;
}
inline uint32_t __vadd4(uint32_t a, uint32_t b) {
  return emul_bytewise(a, b, [](uint32_t x, uint32_t y) { return x + y; });
}
inline uint32_t __vminu4(uint32_t a, uint32_t b) {
  return emul_bytewise(a, b, [](uint32_t x, uint32_t y) { return x < y ? x : y; });
}
inline uint32_t __vmaxu4(uint32_t a, uint32_t b) {
  return emul_bytewise(a, b, [](uint32_t x, uint32_t y) { return x > y ? x : y; });
}
inline uint32_t __vmins4(uint32_t a, uint32_t b) {
  return emul_bytewise(a, b, [](uint32_t x, uint32_t y) {
    return static_cast<int8_t>(x) < static_cast<int8_t>(y) ? x : y;
  });
}
inline uint32_t __vmaxs4(uint32_t a, uint32_t b) {
  return emul_bytewise(a, b, [](uint32_t x, uint32_t y) {
    return static_cast<int8_t>(x) > static_cast<int8_t>(y) ? x : y;
  });
}

// The streaming store: a plain one here.
template <class T>
inline void __stcs(T *p, T value) {
  *p = value;
}

// PRMT: byte i of the result is byte (selector >> 4i) & 7 of y:x (sign replication, the
// selector's bit 3, is not emulated).
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t selector) {
  const uint64_t both = static_cast<uint64_t>(y) << 32 | x;
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned byte = (selector >> (4 * i)) & 7u;
    result |= static_cast<uint32_t>((both >> (8 * byte)) & 0xffu) << (8 * i);
  }
  return result;
}
