// A launch-and-verify check of one GPU: proves the build's kernels run on the device (right
// architecture, working driver) before a job relies on them.  Built with CUDA only.
#pragma once

#include <string>

#include "core/status.h"

namespace cohort {

struct DeviceCheckResult {
  int device = -1;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  double kernel_ms = 0;  // time of the verify kernel over `elements` values
};

// Runs the iota kernel (kernels/verify.h) on `device` over `elements` values and checks every
// value.
Status device_self_check(int device, size_t elements, DeviceCheckResult *out);

}  // namespace cohort
