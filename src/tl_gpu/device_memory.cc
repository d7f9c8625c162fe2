#include "tl_gpu/device_memory.h"

#include "tl_gpu/cuda_call.h"

namespace cohort::tl_gpu {

void DeviceAllocation::reset() {
  if (ptr_ != nullptr) cudaFree(ptr_);
  ptr_ = nullptr;
}

Status DeviceAllocation::allocate(size_t bytes, const char *what) {
  void *p = nullptr;
  Status s = cuda_status(cudaMalloc(&p, bytes), what);
  if (is_error(s)) return s;
  ptr_ = static_cast<char *>(p);
  return cuda_status(cudaMemset(ptr_, 0, bytes), what);
}

void MappedHostAllocation::reset() {
  if (host_ != nullptr) cudaFreeHost(host_);
  host_ = device_ = nullptr;
}

Status MappedHostAllocation::allocate(size_t bytes, const char *what) {
  void *p = nullptr;
  Status s =
      cuda_status(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), what);
  if (is_error(s)) return s;
  host_ = static_cast<char *>(p);
  for (size_t i = 0; i < bytes; ++i) host_[i] = 0;
  void *d = nullptr;
  s = cuda_status(cudaHostGetDevicePointer(&d, p, 0), what);
  device_ = static_cast<char *>(d);
  return s;
}

void IpcMapping::reset() {
  if (ptr_ != nullptr) cudaIpcCloseMemHandle(ptr_);
  ptr_ = nullptr;
}

Status IpcMapping::open(const cudaIpcMemHandle_t &handle, const char *what) {
  void *p = nullptr;
  Status s = cuda_status(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess), what);
  if (!is_error(s)) ptr_ = static_cast<char *>(p);
  return s;
}

void Stream::reset() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

Status Stream::create(bool blocking, const char *what) {
  return cuda_status(
      cudaStreamCreateWithFlags(&stream_, blocking ? cudaStreamDefault : cudaStreamNonBlocking),
      what);
}

void Event::reset() {
  if (event_ != nullptr) cudaEventDestroy(event_);
  event_ = nullptr;
}

Status Event::create(const char *what) {
  return cuda_status(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), what);
}

}  // namespace cohort::tl_gpu
