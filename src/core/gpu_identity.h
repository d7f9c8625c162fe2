// Which GPU a rank uses, as the CUDA runtime sees it.  Built without CUDA, every request for
// a device fails with COHORT_ERR_NOT_SUPPORTED and "current device" means no GPU.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace cohort {

struct GpuIdentity {
  int device = -1;     // CUDA ordinal in this process; -1: no GPU
  std::string bus_id;  // "0000:3b:00.0" (lower case, as sysfs), "" without GPU
  uint8_t uuid[16] = {};
  int numa_node = -1;  // from sysfs for the GPU's PCI device
};

// requested: an ordinal, COHORT_DEVICE_CURRENT (the thread's current device, or no GPU when
// none is visible) or COHORT_DEVICE_NONE.
Status query_gpu_identity(int requested, GpuIdentity *out);

// NUMA node of the CPU this thread runs on (-1 if unknown).
int current_numa_node();

// NUMA node of a PCI device from /sys/bus/pci/devices/<bus_id>/numa_node (-1 if unknown).
int pci_numa_node(const std::string &bus_id);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi prints it.
std::string format_uuid(const uint8_t uuid[16]);

// "cuda 13.0, 9.0 (sm_75 ...)" etc., for cohort_info; "" when built without CUDA.
std::string cuda_build_description();

}  // namespace cohort
