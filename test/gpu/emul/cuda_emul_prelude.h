// The little of CUDA that src/kernels uses, on the CPU: kernel_emul_test and team_emul_test
// compile the real launchers, primitives and collective kernels with g++ over these headers.
// kernel_emul_test runs each launch's threads one after another; team_emul_test runs them
// cooperatively (cooperative.h), blocks and ranks at once, the threads of a block taking turns
// at barriers and spins.  They check the kernels' logic (alignment plan, pack layout, head and
// tail, in place, dtype x op semantics, slicing, handshakes between ranks, abort and timeout)
// where there is no GPU, e.g. in CI; they say nothing about the GPU's arithmetic, memory model
// or speed (kernel_test does, on a device).
#pragma once

#include <algorithm>  // nvcc's own includes bring it to every .cu
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cooperative.h"

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __grid_constant__
#define __launch_bounds__(...)
// Shared memory: an OS thread runs one block at a time (cooperative.h), so a static of the OS
// thread is the block's.
#define __shared__ static thread_local

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
struct alignas(8) uint2 {
  unsigned x, y;
};

struct EmulDim3 {
  unsigned x = 1, y = 1, z = 1;
};
// Per OS thread, so per block in a cooperative launch, whose scheduler sets threadIdx before
// it resumes a thread.
inline thread_local EmulDim3 threadIdx, blockIdx, blockDim, gridDim;

// CUDA's min and max for two values of one type (its mixed-type overloads are not emulated).
template <class T>
inline T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
inline T max(T a, T b) {
  return a < b ? b : a;
}

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

// The load that bypasses L1 (fetches again each time): a plain one here, aligned as the GPU's.
template <class T>
inline T __ldcv(const T *p) {
  cohort_emul_check_aligned(p, sizeof(T));
  return *p;
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

// ------------------------------------------------------------------ waiting and ordering

// Block barriers, the places where the threads of a block take turns (cooperative.h); the call
// site lets the scheduler check that every thread waits at the same one.
#define __syncthreads() ((void)cohort_emul::block_barrier(false, __FILE__, __LINE__))
#define __syncthreads_or(predicate) \
  static_cast<int>(cohort_emul::block_barrier((predicate) != 0, __FILE__, __LINE__))

// A thread that sleeps waits for another: that one runs first.
inline void __nanosleep(unsigned) { cohort_emul::block_spin(); }

// Fences of every scope are the CPU's full fence (a GPU's are no stronger).
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// %globaltimer: the CPU's steady clock in nanoseconds (global_ns.cuh's global_ns()).
inline uint64_t cohort_emul_global_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// The atomic functions: relaxed, as CUDA's.  (x86 orders memory more strongly than a GPU, so
// the emulation cannot show a fence missing between them and other accesses.)
template <class T>
inline T atomicCAS(T *address, std::type_identity_t<T> compare, std::type_identity_t<T> value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value, std::memory_order_relaxed);
  return compare;  // the old value, whether it was swapped or not
}
template <class T>
inline T atomicAdd(T *address, std::type_identity_t<T> value) {
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicSub(T *address, std::type_identity_t<T> value) {
  return std::atomic_ref<T>(*address).fetch_sub(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicExch(T *address, std::type_identity_t<T> value) {
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicOr(T *address, std::type_identity_t<T> value) {
  return std::atomic_ref<T>(*address).fetch_or(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicAnd(T *address, std::type_identity_t<T> value) {
  return std::atomic_ref<T>(*address).fetch_and(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicMax(T *address, std::type_identity_t<T> value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (old < value && !ref.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}
template <class T>
inline T atomicMin(T *address, std::type_identity_t<T> value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (value < old && !ref.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}
