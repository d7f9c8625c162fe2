#include "tl_gpu/device_memory.h"

#include "tl_gpu/cuda_call.h"

namespace cohort::tl_gpu {

DeviceAllocation::~DeviceAllocation() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

Status DeviceAllocation::allocate(size_t bytes, const char *what) {
  void *p = nullptr;
  Status s = cuda_status(cudaMalloc(&p, bytes), what);
  if (is_error(s)) return s;
  ptr_ = static_cast<char *>(p);
  return cuda_status(cudaMemset(ptr_, 0, bytes), what);
}

MappedHostAllocation::~MappedHostAllocation() {
  if (host_ != nullptr) cudaFreeHost(host_);
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

IpcMapping::~IpcMapping() {
  if (ptr_ != nullptr) cudaIpcCloseMemHandle(ptr_);
}

Status IpcMapping::open(const cudaIpcMemHandle_t &handle, const char *what) {
  void *p = nullptr;
  Status s = cuda_status(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess), what);
  if (!is_error(s)) ptr_ = static_cast<char *>(p);
  return s;
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status Stream::create() {
  return cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                     "creating the team's stream");
}

}  // namespace cohort::tl_gpu
