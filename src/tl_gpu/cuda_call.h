// CUDA runtime errors as Cohort statuses: COHORT_ERR_CUDA with what was being done and
// CUDA's own words, recorded as the thread's last error.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace cohort::tl_gpu {

inline Status cuda_status(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return COHORT_SUCCESS;
  return failf(COHORT_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(err),
               cudaGetErrorName(err));
}

}  // namespace cohort::tl_gpu
