// The CUDA IPC transport of collectives on device memory (tl/device_transport.h): every
// local rank allocates one window (kernels/device_team.h) on its GPU, exports it, and maps the
// others'; ranks that share a GPU (MPS) map each other's windows the same way.  The host
// object owns the memory; kernels get a kernels::DeviceTeam by value.
#pragma once

#include <memory>

#include "tl/device_transport.h"

namespace cohort::tl_gpu {

std::unique_ptr<tl::DeviceTransport> make_gpu_transport();

}  // namespace cohort::tl_gpu
