#include "core/gpu_identity.h"

#include <sched.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>

#include "cohort.h"
#include "core/build_info.h"
#include "core/cuda_driver.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cohort {

int current_numa_node() {
  unsigned cpu = 0, node = 0;
  if (getcpu(&cpu, &node) != 0) return -1;
  return static_cast<int>(node);
}

int pci_numa_node(const std::string &bus_id) {
  std::ifstream in("/sys/bus/pci/devices/" + bus_id + "/numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  return node;
}

std::string format_uuid(const uint8_t uuid[16]) {
  char out[64];
  snprintf(out, sizeof(out),
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", uuid[0],
           uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9],
           uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
  return out;
}

#if COHORT_HAVE_CUDA

namespace {

Status cuda_fail(const char *call, cudaError_t err) {
  return failf(COHORT_ERR_CUDA, "%s: %s (%s)", call, cudaGetErrorName(err),
               cudaGetErrorString(err));
}

}  // namespace

// A device's bus id and UUID never change while the process lives, and reading them
// (cudaGetDeviceProperties) costs milliseconds under MPS: look each device up once.
static Status identity_of(int device, GpuIdentity *out) {
  static std::mutex mutex;
  static std::map<int, GpuIdentity> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(device); it != known.end()) {
    *out = it->second;
    return COHORT_SUCCESS;
  }
  char bus_id[32] = {};
  cudaError_t err = cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device);
  if (err != cudaSuccess) return cuda_fail("cudaDeviceGetPCIBusId", err);
  for (char *c = bus_id; *c; ++c) *c = static_cast<char>(tolower(static_cast<unsigned char>(*c)));
  cudaDeviceProp prop;
  err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return cuda_fail("cudaGetDeviceProperties", err);
  GpuIdentity id;
  id.device = device;
  id.bus_id = bus_id;
  for (int i = 0; i < 16; ++i) id.uuid[i] = static_cast<uint8_t>(prop.uuid.bytes[i]);
  id.numa_node = pci_numa_node(id.bus_id);
  known[device] = id;
  *out = id;
  return COHORT_SUCCESS;
}

Status query_gpu_identity(int requested, GpuIdentity *out) {
  GpuIdentity id;
  if (requested == COHORT_DEVICE_ACTIVE) {
    requested =
        memory_kind_detector().thread_has_context() ? COHORT_DEVICE_CURRENT : COHORT_DEVICE_NONE;
  }
  if (requested == COHORT_DEVICE_NONE) {
    *out = id;
    return COHORT_SUCCESS;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" error for the caller
    if (requested == COHORT_DEVICE_CURRENT) {
      *out = id;  // no GPU visible: a host-only rank
      return COHORT_SUCCESS;
    }
    return failf(COHORT_ERR_INVALID_ARG,
                 "config->cuda_device=%d but no CUDA device is visible (cudaGetDeviceCount: %s)",
                 requested, err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
  }
  int device = requested;
  if (device == COHORT_DEVICE_CURRENT) {
    err = cudaGetDevice(&device);
    if (err != cudaSuccess) return cuda_fail("cudaGetDevice", err);
  }
  if (device < 0 || device >= count) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "config->cuda_device=%d is not a valid ordinal: %d device(s) visible", device,
                 count);
  }
  return identity_of(device, out);
}

std::string cuda_build_description() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  char out[256];
  snprintf(
      out, sizeof(out), "CUDA runtime %d.%d, driver %s, built for %s", runtime / 1000,
      (runtime % 1000) / 10,
      driver == 0
          ? "absent"
          : (std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10)).c_str(),
      COHORT_CUDA_ARCH);
  return out;
}

#else  // !COHORT_HAVE_CUDA

Status query_gpu_identity(int requested, GpuIdentity *out) {
  if (requested >= 0) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "config->cuda_device=%d but this Cohort was built without CUDA", requested);
  }
  *out = GpuIdentity{};
  return COHORT_SUCCESS;
}

std::string cuda_build_description() { return ""; }

#endif

}  // namespace cohort
