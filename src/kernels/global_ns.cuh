// The GPU's global timer in nanoseconds (%globaltimer), what kernels measure timeouts with.
// Device code only; the CPU emulation (test/gpu/emul) reads the CPU's steady clock instead.
#pragma once

#include <cstdint>

namespace cohort::kernels {

__device__ __forceinline__ uint64_t global_ns() {
#ifdef COHORT_KERNELS_EMULATION
  return cohort_emul_global_ns();
#else
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
#endif
}

}  // namespace cohort::kernels
