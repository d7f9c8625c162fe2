// What the GPU tests share (gpu_test.cc, gpu_colls.cc): CUDA checks, the dtypes and ops,
// inputs whose reductions are exact, the team on the local GPU, the ways a call runs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstring>
#include <utility>
#include <vector>

#include "test_support.h"
#include "test_values.h"

namespace mpi_test {

#define CUDA_OK(call)                                                  \
  do {                                                                 \
    cudaError_t e_ = (call);                                           \
    CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

inline const cohort_dtype_t kDtypes[] = {
    COHORT_INT8,   COHORT_UINT8,   COHORT_INT32,    COHORT_UINT32,  COHORT_INT64,
    COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32, COHORT_FLOAT64};
inline const cohort_op_t kOps[] = {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG};
inline const char *const kDtypeNames[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                          "uint64", "float16", "bfloat16", "float32", "float64"};
inline const char *const kOpNames[] = {"sum", "prod", "min", "max", "avg"};

// Inputs whose every reduction is exact in every dtype at up to 16 ranks: products stay in
// {-2..2}^ranks only at the first element of each 16, sums within +-64.
inline double input(cohort_dtype_t t, cohort_op_t op, int rank, size_t i) {
  const bool is_unsigned = t == COHORT_UINT8 || t == COHORT_UINT32 || t == COHORT_UINT64;
  if (op == COHORT_PROD) {
    if ((i + rank) % 16 == 0) return is_unsigned ? 2 : -2;
    return is_unsigned || (i + rank) % 3 ? 1 : -1;
  }
  const double v = static_cast<double>((i * 7 + static_cast<size_t>(rank) * 3) % 9);
  return is_unsigned ? v : v - 4;
}

// A team over MPI_COMM_WORLD bound to local rank % GPUs (shared GPUs need
// COHORT_ALLOW_SHARED_GPU=1, which the run script sets).
inline cohort_team_t gpu_team() {
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  const int device = local_ranks().rank % gpus;
  cudaSetDevice(device);
  cudaFree(nullptr);  // the context exists before the team, as in an application
  cohort_team_config_t cfg = config_with_timeout(60);
  cfg.cuda_device = device;
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  return team;
}

enum class Mode { kBlocking, kStream, kGraph };
inline const char *mode_name(Mode m) {
  return m == Mode::kBlocking ? "blocking" : m == Mode::kStream ? "stream" : "graph";
}

// Compares `count` elements; reports the first difference.
inline void compare(const char *what, cohort_dtype_t t, const std::vector<char> &got,
                    const std::vector<char> &want, size_t count) {
  if (memcmp(got.data(), want.data(), count * elem_bytes(t)) == 0) return;
  for (size_t i = 0; i < count; ++i) {
    if (memcmp(got.data() + i * elem_bytes(t), want.data() + i * elem_bytes(t), elem_bytes(t))) {
      CHECK(false, "%s: element %zu of %zu is %g, the host path gives %g", what, i, count,
            load(t, got.data(), i), load(t, want.data(), i));
      return;
    }
  }
}

// The scenarios of gpu_colls.cc.
void collective_matrix();
void mixed_calls();

// --register 1: every rank registers its call's buffers (cohort_mem_register) for the case,
// so large collectives run zero-copy; --register 2: rank 1 registers another buffer instead,
// so every rank runs the same calls through the windows.  The registrations of one case,
// deregistered by its destructor (before the buffers are freed).
class CaseRegistration {
 public:
  // `buffers`: (allocation, bytes) pairs, the same number on every rank.
  CaseRegistration(cohort_team_t team, const std::vector<std::pair<void *, size_t>> &buffers)
      : team_(team) {
    const int mode = opt_int("register", 0);
    if (mode == 0) return;
    if (mode == 2 && g_rank == 1) CUDA_OK(cudaMalloc(&other_, 256));
    for (const auto &[buffer, bytes] : buffers) {
      regs_.push_back(nullptr);
      CHECK_STATUS(
          cohort_mem_register(team, other_ ? other_ : buffer, other_ ? 256 : bytes, &regs_.back()),
          COHORT_SUCCESS);
    }
  }
  ~CaseRegistration() {
    for (cohort_mem_reg_t reg : regs_) {
      CHECK_STATUS(cohort_mem_deregister(team_, reg), COHORT_SUCCESS);
    }
    if (other_ != nullptr) cudaFree(other_);
  }
  CaseRegistration(const CaseRegistration &) = delete;
  CaseRegistration &operator=(const CaseRegistration &) = delete;

 private:
  cohort_team_t team_;
  std::vector<cohort_mem_reg_t> regs_;
  void *other_ = nullptr;
};

}  // namespace mpi_test
