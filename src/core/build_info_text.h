// How this Cohort was built, for cohort_info, cohort_perf and logs.
#pragma once

#include <string>

namespace cohort {

// "0.1.0 (git d3d808d-dirty)": the library version and the source tree's `git describe` at
// configure time ("git unknown" when not built from a git tree).
std::string version_text();

// The CUDA driver found at run time: "NVIDIA driver for CUDA 12.4" or "no NVIDIA driver".
std::string cuda_driver_text();

// Multi-line: version and git revision, configure arguments, MPI, UCX, hwloc and CUDA in this
// build, and the NVIDIA driver found at run time.
std::string build_description();

}  // namespace cohort
