// The kernel of the device check (cohort_info --device-check): device code and its launch,
// nothing of Cohort's host side.  The check around it lives in tools/device_check.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cohort::kernels {

// Writes i * scale + 1 to out[i] for every i < n (out: n device values), on `stream`;
// returns the launch's error.
cudaError_t launch_iota_scaled(unsigned *out, size_t n, unsigned scale, cudaStream_t stream);

}  // namespace cohort::kernels
