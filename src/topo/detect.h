// Detection of this host's topology: hwloc for CPUs/NUMA, the PCI tree and NICs; the CUDA
// runtime for the GPUs this process sees; NVML (dlopen'ed, optional) for NVLinks.  Missing
// pieces degrade with a recorded assumption, never a failure: no GPU, no NVML, a VM with a
// flat PCI tree or unknown NUMA all still give a usable model.
#pragma once

#include "topo/topo.h"

namespace cohort::topo {

struct DetectOptions {
  bool use_cuda = true;  // false: skip the CUDA runtime (cohort_info on a login node)
  bool use_nvml = true;
};

// Builds the model of this host, canonicalized and validated.
Status detect(const DetectOptions &options, Topology *out);

}  // namespace cohort::topo
