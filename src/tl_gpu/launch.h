// One collective call of tl_gpu as kernel launches (src/kernels): the selection's algorithm
// name to the kernels' algorithm, team ranks to local ranks, a one-rank team's copy.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/status.h"
#include "kernels/device_team.h"
#include "tl/device_transport.h"
#include "tl_gpu/registrations.h"

namespace cohort::tl_gpu {

// Enqueues `call` on `stream` for the local ranks of `team` (local_ranks: the team rank of
// each; `registered`: this rank's registered buffers, for the direct algorithm).
// COHORT_ERR_INVALID_ARG for a call the chosen algorithm cannot take (named), else CUDA's
// launch error.
Status launch_call(const kernels::DeviceTeam &team, const std::vector<int> &local_ranks,
                   const Registrations &registered, const tl::DeviceCall &call,
                   cudaStream_t stream);

}  // namespace cohort::tl_gpu
