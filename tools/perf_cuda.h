// cohort_perf -m cuda: each rank bound to a GPU, device buffers with calls on one non-blocking
// stream of their own, CUDA graphs of back-to-back calls (--graph) and the GPU's own copy
// bandwidth (--roofline).  Built without CUDA, bind_gpu() says so and nothing else runs.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "perf_memory.h"

namespace cohort::perf {

struct GpuBinding {
  int device = -1;          // this rank's GPU ordinal
  std::string name;         // its name, e.g. "NVIDIA H200"
  int ranks_per_gpu = 1;    // the most ranks sharing one GPU, over the job
  bool gpu_leader = false;  // the lowest rank of its GPU
};

// Collective over comm: every rank binds GPU local_rank % GPUs (cudaSetDevice, then its
// context) and nothing else.  "" or why not, the same text on every rank (the lowest failing
// rank's): "this Cohort was built without CUDA", "no CUDA device visible on host H: ...".
std::string bind_gpu(MPI_Comm comm, GpuBinding *out);

// Rank 0's hint after a failed team creation: ranks sharing a GPU need
// COHORT_ALLOW_SHARED_GPU=1 (and MPS).  Prints nothing when every rank has a GPU of its own.
void print_shared_gpu_hint(const GpuBinding &gpu);

// Device buffers (cudaMalloc) on the bound GPU; calls, copies and synchronize() on one
// cudaStreamNonBlocking stream.  nullptr without CUDA.
std::unique_ptr<SweepMemory> make_device_memory(bool blocking = false);

// `ops` back-to-back calls captured from a stream into a CUDA graph
// (cudaStreamCaptureModeThreadLocal), instantiated once, then launched on that stream.
class StreamGraph {
 public:
  StreamGraph() = default;
  ~StreamGraph();
  StreamGraph(const StreamGraph &) = delete;
  StreamGraph &operator=(const StreamGraph &) = delete;
  // enqueue() makes one call on the stream and returns "" or its error.
  std::string capture(void *stream, int ops, const std::function<std::string()> &enqueue);
  std::string launch(void *stream);

 private:
  void *graph_ = nullptr;  // cudaGraph_t
  void *exec_ = nullptr;   // cudaGraphExec_t
};

// --roofline: the GPU's cudaMemcpy device-to-device bandwidth, 2 x bytes / the median time
// of `runs` copies (each byte read once and written once).
struct CopyBandwidth {
  double gbs = 0;
  size_t bytes = 0;  // copied each run: 1 GiB, or less when that does not fit
  int runs = 0;
};

// Collective over comm: the lowest rank of each GPU measures while the GPU's other ranks
// wait; every rank gets the slowest GPU's.  "" or why not.
std::string measure_copy_bandwidth(MPI_Comm comm, const GpuBinding &gpu, CopyBandwidth *out);

// The free memory of this rank's GPU (cudaMemGetInfo): every process's allocations on it
// count, so ranks sharing a GPU measure one at a time.  0 without CUDA or on an error.
size_t gpu_free_bytes();

}  // namespace cohort::perf
