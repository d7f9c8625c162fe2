// Host time per call of a 1-rank ncclAllReduce (8 B, in place and out of place), and the device
// memory of the communicator, on whichever libnccl.so.2 the loader finds: Cohort's, or NVIDIA's
// with LD_LIBRARY_PATH pointing at it.  A benchmark for the GPU machine (not a test: nothing is
// asserted); the CUDA driver is reached by dlopen, so the same binary serves both libraries.
//   call_overhead [ITERS]
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "nccl.h"

namespace {

struct Driver {
  int (*stream_sync)(void *) = nullptr;
  int (*mem_info)(size_t *, size_t *) = nullptr;
  void *stream = nullptr;

  bool start() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "cuInit"));
    auto device_get = reinterpret_cast<int (*)(int *, int)>(dlsym(lib, "cuDeviceGet"));
    auto retain = reinterpret_cast<int (*)(void **, int)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    auto set_current = reinterpret_cast<int (*)(void *)>(dlsym(lib, "cuCtxSetCurrent"));
    auto create = reinterpret_cast<int (*)(void **, unsigned)>(dlsym(lib, "cuStreamCreate"));
    stream_sync = reinterpret_cast<int (*)(void *)>(dlsym(lib, "cuStreamSynchronize"));
    mem_info = reinterpret_cast<int (*)(size_t *, size_t *)>(dlsym(lib, "cuMemGetInfo_v2"));
    int device = 0;
    void *context = nullptr;
    return init && device_get && retain && set_current && create && stream_sync && init(0) == 0 &&
           device_get(&device, 0) == 0 && retain(&context, device) == 0 &&
           set_current(context) == 0 && create(&stream, 1) == 0;
  }
  double used_mib() const {
    size_t free = 0, total = 0;
    if (mem_info != nullptr) mem_info(&free, &total);
    return (total - free) / 1048576.0;
  }
};

// Microseconds per call of `iters` calls, on the host and to the stream's end.
template <typename Call>
void time_calls(const char *what, Driver &d, int iters, Call &&call) {
  for (int i = 0; i < 1000; ++i) call();
  d.stream_sync(d.stream);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) call();
  const auto issued = std::chrono::steady_clock::now();
  d.stream_sync(d.stream);
  const auto ended = std::chrono::steady_clock::now();
  std::printf("%s: %.3f us per call on the host, %.3f to the stream's end\n", what,
              std::chrono::duration<double, std::micro>(issued - start).count() / iters,
              std::chrono::duration<double, std::micro>(ended - start).count() / iters);
}

}  // namespace

int main(int argc, char **argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200000;
  Driver d;
  if (!d.start()) {
    std::printf("SKIP: no CUDA driver or device\n");
    return 77;
  }
  float *buf = nullptr;
  if (ncclMemAlloc(reinterpret_cast<void **>(&buf), 1 << 22) != ncclSuccess) return 1;
  auto stream = static_cast<cudaStream_t>(d.stream);
  const double before = d.used_mib();
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    std::printf("ncclCommInitRank failed: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  d.stream_sync(d.stream);
  const double created = d.used_mib();
  const size_t half = 1 << 19;
  ncclAllReduce(buf, buf + half, half, ncclFloat, ncclSum, comm, stream);
  d.stream_sync(d.stream);
  std::printf(
      "device memory: %.1f MiB by the communicator's creation, %.1f more by its first "
      "allreduce\n",
      created - before, d.used_mib() - created);
  for (int rep = 0; rep < 3; ++rep) {
    time_calls("8 B allreduce in place", d, iters,
               [&] { ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, stream); });
  }
  for (int rep = 0; rep < 3; ++rep) {
    time_calls("8 B allreduce out of place", d, iters,
               [&] { ncclAllReduce(buf, buf + half, 2, ncclFloat, ncclSum, comm, stream); });
  }
  ncclCommDestroy(comm);
  ncclMemFree(buf);
  return 0;
}
