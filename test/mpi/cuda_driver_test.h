// The CUDA driver for tests that put buffers in device memory without the CUDA runtime: the
// real driver on a GPU machine, the tests' fake one elsewhere (test/ompi/fake_cuda.c, first on
// LD_LIBRARY_PATH).  Device memory itself comes from cohort_device_alloc, copies from
// cohort_memcpy.
#pragma once

#include <dlfcn.h>

#include "test_support.h"

namespace mpi_test {

struct CudaDriver {
  using Result = int;
  Result (*init)(unsigned) = nullptr;
  Result (*device_count)(int *) = nullptr;
  Result (*device_get)(int *, int) = nullptr;
  Result (*retain)(void **, int) = nullptr;
  Result (*set_current)(void *) = nullptr;
  Result (*stream_create)(void **, unsigned) = nullptr;
  Result (*stream_sync)(void *) = nullptr;
  // Graphs (optional: `graphs()` says whether the driver has them).
  Result (*begin_capture)(void *, int) = nullptr;
  Result (*end_capture)(void *, void **) = nullptr;
  Result (*instantiate)(void **, void *, unsigned long long) = nullptr;
  Result (*launch)(void *, void *) = nullptr;
  Result (*exec_destroy)(void *) = nullptr;
  Result (*graph_destroy)(void *) = nullptr;
  static constexpr int kCaptureThreadLocal = 1;  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

  bool graphs() const {
    return begin_capture && end_capture && instantiate && launch && exec_destroy && graph_destroy;
  }

  // Makes a context current on device local_rank % devices (the local rank among the ranks
  // of this machine); false without a driver or a device.
  bool start() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    init = reinterpret_cast<Result (*)(unsigned)>(dlsym(lib, "cuInit"));
    device_count = reinterpret_cast<Result (*)(int *)>(dlsym(lib, "cuDeviceGetCount"));
    device_get = reinterpret_cast<Result (*)(int *, int)>(dlsym(lib, "cuDeviceGet"));
    retain = reinterpret_cast<Result (*)(void **, int)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    set_current = reinterpret_cast<Result (*)(void *)>(dlsym(lib, "cuCtxSetCurrent"));
    stream_create = reinterpret_cast<Result (*)(void **, unsigned)>(dlsym(lib, "cuStreamCreate"));
    stream_sync = reinterpret_cast<Result (*)(void *)>(dlsym(lib, "cuStreamSynchronize"));
    begin_capture =
        reinterpret_cast<Result (*)(void *, int)>(dlsym(lib, "cuStreamBeginCapture_v2"));
    end_capture = reinterpret_cast<Result (*)(void *, void **)>(dlsym(lib, "cuStreamEndCapture"));
    instantiate = reinterpret_cast<Result (*)(void **, void *, unsigned long long)>(
        dlsym(lib, "cuGraphInstantiateWithFlags"));
    launch = reinterpret_cast<Result (*)(void *, void *)>(dlsym(lib, "cuGraphLaunch"));
    exec_destroy = reinterpret_cast<Result (*)(void *)>(dlsym(lib, "cuGraphExecDestroy"));
    graph_destroy = reinterpret_cast<Result (*)(void *)>(dlsym(lib, "cuGraphDestroy"));
    int count = 0, device = 0;
    void *context = nullptr;
    return init && device_count && device_get && retain && set_current && stream_create &&
           stream_sync && init(0) == 0 && device_count(&count) == 0 && count > 0 &&
           device_get(&device, local_ranks().rank % count) == 0 && retain(&context, device) == 0 &&
           set_current(context) == 0;
  }

  // A stream of the current context, ordered with the legacy default stream (default flags):
  // the tests fill device memory with cohort_memcpy (cuMemcpy), which may return before a copy
  // from pageable memory reached the device; only streams ordered with the legacy one wait
  // for it.  nullptr on failure.
  void *new_stream() {
    void *stream = nullptr;
    return stream_create(&stream, 0) == 0 ? stream : nullptr;
  }
};

}  // namespace mpi_test
