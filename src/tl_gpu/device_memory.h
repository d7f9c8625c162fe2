// Owners of CUDA resources (each frees its own in its destructor, errors ignored: they end a
// team that is going away): device memory, mapped pinned host memory, a peer's window mapped
// through CUDA IPC, a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/status.h"

namespace cohort::tl_gpu {

class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(const DeviceAllocation &) = delete;
  DeviceAllocation &operator=(const DeviceAllocation &) = delete;
  ~DeviceAllocation() { reset(); }
  // `bytes` of device memory on the current device, zeroed on the legacy default stream (the
  // caller synchronises before others use it).
  Status allocate(size_t bytes, const char *what);
  void reset();
  char *get() const { return ptr_; }

 private:
  char *ptr_ = nullptr;
};

// Zeroed pinned host memory the device reads and writes too.
class MappedHostAllocation {
 public:
  MappedHostAllocation() = default;
  MappedHostAllocation(const MappedHostAllocation &) = delete;
  MappedHostAllocation &operator=(const MappedHostAllocation &) = delete;
  ~MappedHostAllocation() { reset(); }
  Status allocate(size_t bytes, const char *what);
  void reset();
  char *host() const { return host_; }
  char *device() const { return device_; }

 private:
  char *host_ = nullptr;
  char *device_ = nullptr;
};

// Another process's allocation, opened here from its IPC handle.
class IpcMapping {
 public:
  IpcMapping() = default;
  IpcMapping(const IpcMapping &) = delete;
  IpcMapping &operator=(const IpcMapping &) = delete;
  ~IpcMapping() { reset(); }
  Status open(const cudaIpcMemHandle_t &handle, const char *what);
  void reset();
  char *get() const { return ptr_; }

 private:
  char *ptr_ = nullptr;
};

class Stream {
 public:
  Stream() = default;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() { reset(); }
  // `blocking`: ordered with the legacy default stream, as a stream of default flags.
  Status create(bool blocking, const char *what);
  void reset();
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event() { reset(); }
  Status create(const char *what);  // without timing: the cheapest to record
  void reset();
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace cohort::tl_gpu
