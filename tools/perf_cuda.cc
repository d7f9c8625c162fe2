#include "perf_cuda.h"

#include <cstdio>

#include "core/build_info.h"
#include "core/cuda_driver.h"
#include "perf_job.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <vector>
#endif

namespace cohort::perf {

void print_shared_gpu_hint(const GpuBinding &gpu) {
  if (gpu.ranks_per_gpu <= 1) return;
  fprintf(stderr,
          "cohort_perf: %d ranks share a GPU: that needs COHORT_ALLOW_SHARED_GPU=1 (and MPS for "
          "their kernels to run at the same time)\n",
          gpu.ranks_per_gpu);
}

#if COHORT_HAVE_CUDA
namespace {

std::string cuda_error(const char *call, cudaError_t err) {
  return std::string(call) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

int local_rank_of(MPI_Comm comm, MPI_Comm *local) {
  int rank = 0, local_rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, local);
  MPI_Comm_rank(*local, &local_rank);
  return local_rank;
}

// This rank's GPU and its context; "" or why not.
std::string bind_local(int local_rank, GpuBinding *out, cudaUUID_t *uuid) {
  int gpus = 0;
  cudaError_t err = cudaGetDeviceCount(&gpus);
  if (err != cudaSuccess || gpus == 0) {
    // Without a driver the runtime says "insufficient driver": say what is missing instead.
    const std::string why = cuda_driver_version() == 0 ? ": no NVIDIA driver (libcuda.so.1)"
                            : err != cudaSuccess ? ": " + cuda_error("cudaGetDeviceCount", err)
                                                 : "";
    return "no CUDA device visible on host " + host_name() + why;
  }
  out->device = local_rank % gpus;
  if ((err = cudaSetDevice(out->device)) != cudaSuccess) return cuda_error("cudaSetDevice", err);
  if ((err = cudaFree(nullptr)) != cudaSuccess) return cuda_error("creating the context", err);
  cudaDeviceProp prop;
  if ((err = cudaGetDeviceProperties(&prop, out->device)) != cudaSuccess) {
    return cuda_error("cudaGetDeviceProperties", err);
  }
  out->name = prop.name;
  *uuid = prop.uuid;
  return "";
}

// How many ranks of this host share this rank's GPU, and whether this rank is their lowest.
void share_of_gpu(MPI_Comm local, const cudaUUID_t &uuid, int *sharing, bool *leader) {
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  std::vector<cudaUUID_t> all(local_size);
  MPI_Allgather(&uuid, sizeof uuid, MPI_BYTE, all.data(), sizeof uuid, MPI_BYTE, local);
  *sharing = 0;
  *leader = true;
  for (int q = 0; q < local_size; ++q) {
    if (memcmp(&all[q], &uuid, sizeof uuid) != 0) continue;
    ++*sharing;
    if (q < local_rank) *leader = false;
  }
}

class DeviceMemory final : public SweepMemory {
 public:
  explicit DeviceMemory(bool blocking) : blocking_(blocking) {}
  ~DeviceMemory() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (cohort_mem_reg_t reg : registrations_) cohort_mem_deregister(team_, reg);
    cudaFree(input_);
    cudaFree(output_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  std::string allocate(size_t bytes) override {
    cudaError_t err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (err != cudaSuccess) return cuda_error("cudaStreamCreateWithFlags", err);
    bytes_ = bytes;
    if ((err = cudaMalloc(&input_, bytes)) != cudaSuccess ||
        (err = cudaMalloc(&output_, bytes)) != cudaSuccess) {
      return cuda_error(("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), err);
    }
    return "";
  }
  std::string register_buffers(cohort_team_t team) override {
    team_ = team;
    for (void *buffer : {input_, output_}) {
      cohort_mem_reg_t reg = nullptr;
      if (cohort_mem_register(team, buffer, bytes_, &reg) != COHORT_SUCCESS) {
        return std::string("cohort_mem_register: ") + cohort_last_error();
      }
      registrations_.push_back(reg);
    }
    return "";
  }
  Buffers buffers() const override {
    return {static_cast<const char *>(input_), static_cast<char *>(output_)};
  }
  std::string upload(void *dst, const void *host, size_t bytes) override {
    return copy_and_wait(dst, host, bytes, cudaMemcpyHostToDevice);
  }
  std::string download(void *host, const void *src, size_t bytes) override {
    return copy_and_wait(host, src, bytes, cudaMemcpyDeviceToHost);
  }
  std::string copy(const StageCopy &copy) override {
    if (copy.bytes == 0) return "";
    const cudaError_t err =
        cudaMemcpyAsync(copy.dst, copy.src, copy.bytes, cudaMemcpyDeviceToDevice, stream_);
    if (err != cudaSuccess) return cuda_error("cudaMemcpyAsync (device to device)", err);
    return blocking_ ? synchronize() : "";  // a blocking call runs on Cohort's own stream
  }
  cohort_status_t run(cohort_team_t team, const Call &call) override {
    return blocking_ ? run_cohort(team, call) : run_cohort_stream(team, call, stream_);
  }
  std::string synchronize() override {
    const cudaError_t err = cudaStreamSynchronize(stream_);
    return err == cudaSuccess ? "" : cuda_error("cudaStreamSynchronize", err);
  }
  void *stream() const override { return stream_; }

 private:
  // On the stream (a non-blocking one: cudaMemcpy would not wait for it), then waited for.
  std::string copy_and_wait(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return "";
    const cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind, stream_);
    if (err != cudaSuccess) return cuda_error("cudaMemcpyAsync", err);
    return synchronize();
  }
  bool blocking_;  // --blocking: cohort_allreduce, ... (on Cohort's own stream)
  cudaStream_t stream_ = nullptr;
  void *input_ = nullptr;
  void *output_ = nullptr;
  size_t bytes_ = 0;
  cohort_team_t team_ = nullptr;
  std::vector<cohort_mem_reg_t> registrations_;  // deregistered before the buffers are freed
};

// The median time in ms of `runs` copies of `bytes` on the current device; "" or why not,
// with *no_memory set when the buffers did not fit.
std::string time_copies(size_t bytes, int runs, double *median_ms, bool *no_memory) {
  void *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<float> ms(runs);
  cudaError_t err = cudaMalloc(&src, bytes);
  if (err == cudaSuccess) err = cudaMalloc(&dst, bytes);
  *no_memory = err == cudaErrorMemoryAllocation;
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err == cudaSuccess) err = cudaEventCreate(&start);
  if (err == cudaSuccess) err = cudaEventCreate(&stop);
  if (err == cudaSuccess) err = cudaMemsetAsync(src, 1, bytes, stream);
  for (int r = -2; r < runs && err == cudaSuccess; ++r) {  // two untimed copies first
    cudaEventRecord(start, stream);
    err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
    cudaEventRecord(stop, stream);
    if (err == cudaSuccess) err = cudaEventSynchronize(stop);
    if (err == cudaSuccess && r >= 0) err = cudaEventElapsedTime(&ms[r], start, stop);
  }
  if (stop != nullptr) cudaEventDestroy(stop);
  if (start != nullptr) cudaEventDestroy(start);
  if (stream != nullptr) cudaStreamDestroy(stream);
  cudaFree(dst);
  cudaFree(src);
  if (err != cudaSuccess) return cuda_error("copying device to device", err);
  std::sort(ms.begin(), ms.end());
  *median_ms = ms[(runs - 1) / 2];
  return "";
}

// Copies of 1 GiB, halved while the GPU cannot hold two buffers of that size.
std::string measure_this_gpu(CopyBandwidth *out) {
  constexpr size_t kMost = size_t{1} << 30, kLeast = size_t{64} << 20;
  out->runs = 20;
  std::string why;
  for (size_t bytes = kMost; bytes >= kLeast; bytes /= 2) {
    double ms = 0;
    bool no_memory = false;
    why = time_copies(bytes, out->runs, &ms, &no_memory);
    if (why.empty()) {
      out->bytes = bytes;
      out->gbs = 2.0 * static_cast<double>(bytes) / (ms * 1e6);
      return "";
    }
    if (!no_memory) break;
    cudaGetLastError();  // the failed allocation's error is no sticky one: clear it
  }
  return why;
}

}  // namespace

std::string bind_gpu(MPI_Comm comm, GpuBinding *out) {
  MPI_Comm local;
  const int local_rank = local_rank_of(comm, &local);
  cudaUUID_t uuid = {};
  std::string why = first_error(comm, bind_local(local_rank, out, &uuid));
  if (why.empty()) {
    int sharing = 1;
    share_of_gpu(local, uuid, &sharing, &out->gpu_leader);
    MPI_Allreduce(&sharing, &out->ranks_per_gpu, 1, MPI_INT, MPI_MAX, comm);
  }
  MPI_Comm_free(&local);
  return why;
}

std::unique_ptr<SweepMemory> make_device_memory(bool blocking) {
  return std::make_unique<DeviceMemory>(blocking);
}

StreamGraph::~StreamGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

std::string StreamGraph::capture(void *stream, int ops,
                                 const std::function<std::string()> &enqueue) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t err = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) return cuda_error("cudaStreamBeginCapture", err);
  std::string why;
  for (int i = 0; i < ops && why.empty(); ++i) why = enqueue();
  cudaGraph_t graph = nullptr;
  err = cudaStreamEndCapture(s, &graph);
  graph_ = graph;
  if (!why.empty()) return why;
  if (err != cudaSuccess) return cuda_error("cudaStreamEndCapture", err);
  cudaGraphExec_t exec = nullptr;
  err = cudaGraphInstantiate(&exec, graph, 0);
  if (err != cudaSuccess) return cuda_error("cudaGraphInstantiate", err);
  exec_ = exec;
  return "";
}

std::string StreamGraph::launch(void *stream) {
  const cudaError_t err =
      cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream));
  return err == cudaSuccess ? "" : cuda_error("cudaGraphLaunch", err);
}

std::string measure_copy_bandwidth(MPI_Comm comm, const GpuBinding &gpu, CopyBandwidth *out) {
  CopyBandwidth mine;
  const std::string why = first_error(comm, gpu.gpu_leader ? measure_this_gpu(&mine) : "");
  if (!why.empty()) return why;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  struct {
    double gbs;
    int rank;
  } candidate = {gpu.gpu_leader ? mine.gbs : DBL_MAX, rank}, slowest;
  MPI_Allreduce(&candidate, &slowest, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm);
  MPI_Bcast(&mine, sizeof mine, MPI_BYTE, slowest.rank, comm);
  *out = mine;
  return "";
}

size_t gpu_free_bytes() {
  size_t free = 0, total = 0;
  return cudaMemGetInfo(&free, &total) == cudaSuccess ? free : 0;
}

#else  // !COHORT_HAVE_CUDA

std::string bind_gpu(MPI_Comm comm, GpuBinding *) {
  return first_error(comm, "this Cohort was built without CUDA (configure --with-cuda)");
}

std::unique_ptr<SweepMemory> make_device_memory(bool) { return nullptr; }

StreamGraph::~StreamGraph() = default;

std::string StreamGraph::capture(void *, int, const std::function<std::string()> &) {
  return "this Cohort was built without CUDA";
}

std::string StreamGraph::launch(void *) { return "this Cohort was built without CUDA"; }

std::string measure_copy_bandwidth(MPI_Comm, const GpuBinding &, CopyBandwidth *) {
  return "this Cohort was built without CUDA";
}

size_t gpu_free_bytes() { return 0; }

#endif  // COHORT_HAVE_CUDA

}  // namespace cohort::perf
