// The CUDA runtime for kernel_emul_test (cuda_emul_prelude.h): "device" memory is host memory,
// one emulated device of 3 multiprocessors, and a launch runs every thread of the grid in turn.
#pragma once

#include <cstdlib>
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
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

template <class... Args, size_t... I>
void emul_call(void (*kernel)(Args...), void **args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cvref_t<Args> *>(args[I])...);
}

// Every thread of the grid, blocks last to first and threads in a scrambled order, so that a
// thread relying on another having run first would show.
template <class... Args>
cudaError_t cudaLaunchKernel(void (*kernel)(Args...), dim3 grid, dim3 block, void **args, size_t,
                             cudaStream_t) {
  gridDim = {grid.x, 1, 1};
  blockDim = {block.x, 1, 1};
  for (unsigned b = grid.x; b-- > 0;) {
    for (unsigned i = 0; i < block.x; ++i) {
      blockIdx = {b, 0, 0};
      threadIdx = {(i * 7) % block.x, 0, 0};  // block.x is a multiple of 32: 7 is coprime
      emul_call(kernel, args, std::index_sequence_for<Args...>{});
    }
  }
  return cudaSuccess;
}
