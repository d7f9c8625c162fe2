// The CUDA runtime for the emulated kernels (cuda_emul_prelude.h): "device" memory is host
// memory, one emulated device of 3 multiprocessors, and a launch runs every thread of the grid,
// in turn or cooperatively (cooperative.h), before it returns.
#pragma once

#include <cstdlib>
#include <functional>
#include <type_traits>
#include <utility>

#include "cuda_emul_prelude.h"

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
using cudaStream_t = struct EmulStream *;
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
enum cudaMemcpyKind {
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3() = default;
  dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
};

inline const char *cudaGetErrorName(cudaError_t err) {
  return err == cudaSuccess ? "cudaSuccess" : "cudaErrorInvalidValue";
}
inline const char *cudaGetErrorString(cudaError_t err) {
  return err == cudaSuccess ? "no error" : "invalid argument";
}
inline cudaError_t cudaGetDeviceCount(int *count) {
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int) {
  std::strcpy(prop->name, "CPU emulation");
  prop->major = prop->minor = 0;
  prop->multiProcessorCount = 3;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr, int) {
  *value = 3;
  return cudaSuccess;
}
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *, int,
                                                                 size_t) {
  *blocks = 2;
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void **p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  return cudaSuccess;
}
inline cudaError_t cudaFree(void *p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
// Page-locked memory mapped for the device: ordinary memory, at the same address.
constexpr unsigned cudaHostAllocPortable = 1, cudaHostAllocMapped = 2;
inline cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned) { return cudaMalloc(p, bytes); }
inline cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }
struct cudaFuncAttributes {
  int maxThreadsPerBlock = 1024;
};
template <class F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attributes, F *) {
  *attributes = cudaFuncAttributes{};
  return cudaSuccess;
}

template <class... Args, size_t... I>
void emul_call(void (*kernel)(Args...), void **args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cvref_t<Args> *>(args[I])...);
}

namespace cohort_emul {

// Runs thread_body for every thread of the grid, in the calling OS thread's launch mode:
// in turn (blocks last to first, threads in a scrambled order, so that a thread relying on
// another having run first would show) or cooperatively (cooperative.h).
void launch(dim3 grid, dim3 block, const std::function<void()> &thread_body);

// A kernel launched by its address (cudaLaunchKernel's C form, as allreduce.cu launches) has
// lost its parameter types: the shim finds them by that address.  So the emulation's source
// registers every such kernel (register_kernel), e.g. through the launcher's own dispatch.
using KernelInvoker = void (*)(const void *kernel, void **args);
void register_invoker(const void *kernel, KernelInvoker invoker);
KernelInvoker find_invoker(const void *kernel);  // aborts for a kernel not registered

template <class... Args>
void invoke_as(const void *kernel, void **args) {
  emul_call(reinterpret_cast<void (*)(Args...)>(const_cast<void *>(kernel)), args,
            std::index_sequence_for<Args...>{});
}

template <class... Args>
void register_kernel(void (*kernel)(Args...)) {
  register_invoker(reinterpret_cast<const void *>(kernel), &invoke_as<Args...>);
}

}  // namespace cohort_emul

template <class... Args>
cudaError_t cudaLaunchKernel(void (*kernel)(Args...), dim3 grid, dim3 block, void **args, size_t,
                             cudaStream_t) {
  cohort_emul::launch(grid, block,
                      [&] { emul_call(kernel, args, std::index_sequence_for<Args...>{}); });
  return cudaSuccess;
}

inline cudaError_t cudaLaunchKernel(const void *kernel, dim3 grid, dim3 block, void **args, size_t,
                                    cudaStream_t) {
  const cohort_emul::KernelInvoker invoke = cohort_emul::find_invoker(kernel);
  cohort_emul::launch(grid, block, [&] { invoke(kernel, args); });
  return cudaSuccess;
}
