#include "verify.h"

namespace cohort::kernels {
namespace {

__global__ void iota_scaled(unsigned *out, size_t n, unsigned scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<unsigned>(i) * scale + 1u;
  }
}

}  // namespace

cudaError_t launch_iota_scaled(unsigned *out, size_t n, unsigned scale, cudaStream_t stream) {
  iota_scaled<<<256, 256, 0, stream>>>(out, n, scale);
  return cudaGetLastError();
}

}  // namespace cohort::kernels
