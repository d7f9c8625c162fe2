// Which NIC a GPU sends through, where a host has several: the nearest ones (the best path
// type from the GPU, then the widest), and among GPUs that share the same nearest NICs, one
// NIC each in turn (bus-id order), so that GPUs spread over the NICs they are equally close
// to, as NCCL assigns its network devices.  Pure: the same model gives the same answer.
#pragma once

#include <vector>

#include "topo/paths.h"
#include "topo/topo.h"

namespace cohort::topo {

// The NICs (node indices, in bus-id order) whose path from `gpu` is best: lowest type, then
// widest.  Empty when the host has none or `gpu` is not a GPU of the model.
std::vector<int> nearest_nics(const Topology &topo, const Paths &paths, int gpu);

// The NIC `gpu` sends through (a node index), or -1 when it has none.
int nic_of_gpu(const Topology &topo, const Paths &paths, int gpu);

}  // namespace cohort::topo
