// How this Cohort was built, for cohort_info and logs.
#pragma once

#include <string>

namespace cohort {

// Multi-line: version, configure arguments, MPI, UCX, hwloc and CUDA in this build.
std::string build_description();

}  // namespace cohort
