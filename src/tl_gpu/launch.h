// One collective call of tl_gpu as a kernel launch (src/kernels): the call's record
// (coll/call.h) to the kernel's parameters (kernels::CollArgs, every collective alike): the
// selection's algorithm id to the kernels' algorithm, team ranks to local ranks; a one-rank
// team's copy.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/status.h"
#include "kernels/collectives.h"
#include "kernels/device_team.h"
#include "tl/device_transport.h"
#include "tl_gpu/registrations.h"

namespace cohort::tl_gpu {

// The kernel's parameters for `call` on a team of several local ranks: its arguments, the
// root as a local rank, the kernels' algorithm for the selection's id (zero-copy only where
// the team registered buffers, with where src and dst lie among `registered`).
// COHORT_ERR_NOT_SUPPORTED for a collective without a GPU kernel, COHORT_ERR_INVALID_ARG for a
// one-shot call over the one-shot area (named).
Status kernel_args(const kernels::DeviceTeam &team, const std::vector<int> &local_ranks,
                   const Registrations &registered, const coll::Call &call,
                   kernels::CollArgs *args);

// Enqueues `call` on `stream` for the local ranks of `team` (local_ranks: the team rank of
// each; `registered`: this rank's registered buffers, for the direct algorithm).
// COHORT_ERR_INVALID_ARG for a call the chosen algorithm cannot take (named), else CUDA's
// launch error.
Status launch_call(const kernels::DeviceTeam &team, const std::vector<int> &local_ranks,
                   const Registrations &registered, const coll::Call &call, cudaStream_t stream);

}  // namespace cohort::tl_gpu
