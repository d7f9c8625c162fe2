#include "core/cuda_stream.h"

#include <dlfcn.h>

#include "core/cuda_driver.h"

namespace cohort::cuda {
namespace {

// The driver API values used here (cuda.h is not needed to build this file).
using CuResult = int;
using Ptr = uintptr_t;  // CUdeviceptr
constexpr CuResult kSuccess = 0;
constexpr CuResult kNotReady = 600;          // CUDA_ERROR_NOT_READY
constexpr unsigned kHostAllocPortable = 1;   // CU_MEMHOSTALLOC_PORTABLE
constexpr unsigned kHostAllocDeviceMap = 2;  // CU_MEMHOSTALLOC_DEVICEMAP
constexpr unsigned kStreamDefault = 0;       // CU_STREAM_DEFAULT: ordered with the legacy stream
constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
constexpr unsigned kWaitGeq = 0;             // CU_STREAM_WAIT_VALUE_GEQ (cyclic)

// The entry points, by name; the _v2 stream memory operations (CUDA 11.7 and later) before
// the first ones, which needed a driver option on older systems.
enum Fn {
  kHostAlloc,
  kFreeHost,
  kHostDevicePointer,
  kStreamCreate,
  kStreamDestroy,
  kStreamQuery,
  kStreamIsCapturing,
  kEventCreate,
  kEventDestroy,
  kEventRecord,
  kEventQuery,
  kStreamWaitEvent,
  kMemcpyAsync,
  kWriteValue32,
  kWaitValue32,
  kGetErrorString,
  kCtxGetCurrent,
  kCtxPush,
  kCtxPop,
  // For calls captured into CUDA graphs only (capture_ops_available).
  kUserObjectCreate,
  kUserObjectRelease,
  kGraphRetainUserObject,
  kGetCaptureInfo,
  kExchangeCaptureMode,
  kFnCount
};
constexpr int kFirstCaptureFn = kUserObjectCreate;
constexpr const char *kNames[kFnCount][2] = {{"cuMemHostAlloc", nullptr},
                                             {"cuMemFreeHost", nullptr},
                                             {"cuMemHostGetDevicePointer_v2", nullptr},
                                             {"cuStreamCreate", nullptr},
                                             {"cuStreamDestroy_v2", nullptr},
                                             {"cuStreamQuery", nullptr},
                                             {"cuStreamIsCapturing", nullptr},
                                             {"cuEventCreate", nullptr},
                                             {"cuEventDestroy_v2", nullptr},
                                             {"cuEventRecord", nullptr},
                                             {"cuEventQuery", nullptr},
                                             {"cuStreamWaitEvent", nullptr},
                                             {"cuMemcpyAsync", nullptr},
                                             {"cuStreamWriteValue32_v2", "cuStreamWriteValue32"},
                                             {"cuStreamWaitValue32_v2", "cuStreamWaitValue32"},
                                             {"cuGetErrorString", nullptr},
                                             {"cuCtxGetCurrent", nullptr},
                                             {"cuCtxPushCurrent_v2", nullptr},
                                             {"cuCtxPopCurrent_v2", nullptr},
                                             {"cuUserObjectCreate", nullptr},
                                             {"cuUserObjectRelease", nullptr},
                                             {"cuGraphRetainUserObject", nullptr},
                                             {"cuStreamGetCaptureInfo_v2", nullptr},
                                             {"cuThreadExchangeStreamCaptureMode", nullptr}};

struct Driver {
  void *fn[kFnCount] = {};
  const char *missing = nullptr;          // the first entry point the driver lacks
  const char *missing_capture = nullptr;  // the first of those for captured calls
};

const Driver &driver() {
  static const Driver d = [] {
    Driver out;
    void *lib = driver_library();
    for (int i = 0; i < kFnCount; ++i) {
      for (const char *name : kNames[i]) {
        if (lib != nullptr && name != nullptr && out.fn[i] == nullptr) out.fn[i] = dlsym(lib, name);
      }
      const char **missing = i < kFirstCaptureFn ? &out.missing : &out.missing_capture;
      if (out.fn[i] == nullptr && *missing == nullptr) *missing = kNames[i][0];
    }
    if (lib == nullptr) out.missing = out.missing_capture = "libcuda.so.1";
    return out;
  }();
  return d;
}

template <typename F>
F entry(Fn f) {
  return reinterpret_cast<F>(driver().fn[f]);
}

Status checked(CuResult r, const char *what) {
  if (r == kSuccess) return COHORT_SUCCESS;
  const char *words = nullptr;
  auto describe = entry<CuResult (*)(CuResult, const char **)>(kGetErrorString);
  if (describe == nullptr || describe(r, &words) != kSuccess || words == nullptr) {
    words = "unknown error";
  }
  return failf(COHORT_ERR_CUDA, "%s: %s (CUresult %d)", what, words, r);
}

// Not-ready is an answer, not an error.
Status polled(CuResult r, const char *what) {
  return r == kNotReady ? COHORT_IN_PROGRESS : checked(r, what);
}

Ptr address(const void *p) { return reinterpret_cast<Ptr>(p); }

}  // namespace

Status stream_ops_available() {
  if (driver().missing == nullptr) return COHORT_SUCCESS;
  return failf(COHORT_ERR_NOT_SUPPORTED, "the CUDA driver lacks %s", driver().missing);
}

Status capture_ops_available() {
  if (Status s = stream_ops_available(); is_error(s)) return s;
  if (driver().missing_capture == nullptr) return COHORT_SUCCESS;
  return failf(COHORT_ERR_NOT_SUPPORTED, "the CUDA driver lacks %s", driver().missing_capture);
}

void *current_context() {
  void *context = nullptr;
  auto get = entry<CuResult (*)(void **)>(kCtxGetCurrent);
  if (get == nullptr || get(&context) != kSuccess) return nullptr;
  return context;
}

ContextScope::ContextScope(void *context) {
  if (context == nullptr || context == current_context()) return;
  auto push = entry<CuResult (*)(void *)>(kCtxPush);
  pushed_ = push != nullptr && push(context) == kSuccess;
}

ContextScope::~ContextScope() {
  void *popped = nullptr;
  if (pushed_) entry<CuResult (*)(void **)>(kCtxPop)(&popped);
}

Status mapped_alloc(size_t bytes, void **host, const char *what) {
  *host = nullptr;
  if (Status s = stream_ops_available(); is_error(s)) return s;
  void *p = nullptr;
  Status s = checked(entry<CuResult (*)(void **, size_t, unsigned)>(kHostAlloc)(
                         &p, bytes, kHostAllocPortable | kHostAllocDeviceMap),
                     what);
  // Unified addressing maps it at the same address: the stream operations take it as it is.
  Ptr device = 0;
  if (!is_error(s)) {
    s = checked(entry<CuResult (*)(Ptr *, void *, unsigned)>(kHostDevicePointer)(&device, p, 0),
                what);
  }
  if (!is_error(s) && device != address(p)) {
    s = failf(COHORT_ERR_NOT_SUPPORTED,
              "%s: mapped host memory has another address on the device (no unified addressing)",
              what);
  }
  if (is_error(s)) {
    if (p != nullptr) mapped_free(p);
    return s;
  }
  *host = p;
  return COHORT_SUCCESS;
}

void mapped_free(void *host) {
  if (host != nullptr) entry<CuResult (*)(void *)>(kFreeHost)(host);
}

Status stream_create(void **stream, const char *what) {
  if (Status s = stream_ops_available(); is_error(s)) return s;
  return checked(entry<CuResult (*)(void **, unsigned)>(kStreamCreate)(stream, kStreamDefault),
                 what);
}

void stream_destroy(void *stream) {
  if (stream != nullptr) entry<CuResult (*)(void *)>(kStreamDestroy)(stream);
}

Status stream_query(void *stream, const char *what) {
  return polled(entry<CuResult (*)(void *)>(kStreamQuery)(stream), what);
}

Status stream_capturing(void *stream, const char *what) {
  int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
  Status s = checked(entry<CuResult (*)(void *, int *)>(kStreamIsCapturing)(stream, &status), what);
  return is_error(s) ? s : status == 0 ? COHORT_SUCCESS : COHORT_IN_PROGRESS;
}

Status event_create(void **event, const char *what) {
  if (Status s = stream_ops_available(); is_error(s)) return s;
  return checked(entry<CuResult (*)(void **, unsigned)>(kEventCreate)(event, kEventDisableTiming),
                 what);
}

void event_destroy(void *event) {
  if (event != nullptr) entry<CuResult (*)(void *)>(kEventDestroy)(event);
}

Status event_record(void *event, void *stream, const char *what) {
  return checked(entry<CuResult (*)(void *, void *)>(kEventRecord)(event, stream), what);
}

Status event_query(void *event, const char *what) {
  return polled(entry<CuResult (*)(void *)>(kEventQuery)(event), what);
}

Status stream_wait_event(void *stream, void *event, const char *what) {
  return checked(entry<CuResult (*)(void *, void *, unsigned)>(kStreamWaitEvent)(stream, event, 0),
                 what);
}

Status copy_async(void *dst, const void *src, size_t bytes, void *stream, const char *what) {
  if (bytes == 0) return COHORT_SUCCESS;
  return checked(entry<CuResult (*)(Ptr, Ptr, size_t, void *)>(kMemcpyAsync)(
                     address(dst), address(src), bytes, stream),
                 what);
}

Status write_word(uint32_t *word, uint32_t value, void *stream, const char *what) {
  return checked(entry<CuResult (*)(void *, Ptr, uint32_t, unsigned)>(kWriteValue32)(
                     stream, address(word), value, 0),
                 what);
}

Status wait_word(uint32_t *word, uint32_t value, void *stream, const char *what) {
  return checked(entry<CuResult (*)(void *, Ptr, uint32_t, unsigned)>(kWaitValue32)(
                     stream, address(word), value, kWaitGeq),
                 what);
}

Status retain_in_capture(void *stream, void *object, void (*destroy)(void *), const char *what) {
  constexpr unsigned kNoDestructorSync = 1;  // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC
  constexpr unsigned kMove = 1;              // CU_GRAPH_USER_OBJECT_MOVE
  int status = 0;
  unsigned long long id = 0;
  void *graph = nullptr;
  const void *deps = nullptr;
  size_t deps_count = 0;
  Status s = checked(
      entry<CuResult (*)(void *, int *, unsigned long long *, void **, const void **, size_t *)>(
          kGetCaptureInfo)(stream, &status, &id, &graph, &deps, &deps_count),
      what);
  if (!is_error(s) && graph == nullptr) {
    s = failf(COHORT_ERR_INVALID_USAGE, "%s: the stream is not capturing a graph", what);
  }
  void *user = nullptr;
  if (!is_error(s)) {
    s = checked(entry<CuResult (*)(void **, void *, void (*)(void *), unsigned, unsigned)>(
                    kUserObjectCreate)(&user, object, destroy, 1, kNoDestructorSync),
                what);
  }
  if (is_error(s)) {
    destroy(object);
    return s;
  }
  s = checked(entry<CuResult (*)(void *, void *, unsigned, unsigned)>(kGraphRetainUserObject)(
                  graph, user, 1, kMove),
              what);
  // Not moved: the one reference is still ours, and dropping it destroys `object`.
  if (is_error(s)) entry<CuResult (*)(void *, unsigned)>(kUserObjectRelease)(user, 1);
  return s;
}

RelaxedCapture::RelaxedCapture() {
  int mode = kRelaxed;
  auto exchange = entry<CuResult (*)(int *)>(kExchangeCaptureMode);
  if (exchange != nullptr && exchange(&mode) == kSuccess) {
    previous_ = mode;
    exchanged_ = true;
  }
}

RelaxedCapture::~RelaxedCapture() {
  if (exchanged_) entry<CuResult (*)(int *)>(kExchangeCaptureMode)(&previous_);
}

}  // namespace cohort::cuda
