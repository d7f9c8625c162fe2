// --version, the same in every Cohort tool: the tool's name, then the build description
// (library version, git revision, configure arguments, MPI, UCX, hwloc, CUDA, NVIDIA driver).
#pragma once

namespace cohort::tools {

// True when an argument is "--version".  The tools answer it before parsing anything else,
// and cohort_perf before MPI_Init, so that it needs no MPI job.
bool asks_version(int argc, char **argv);

// Prints "TOOL: Cohort 0.1.0 (git REV)" and the build's lines on stdout.
void print_version(const char *tool);

}  // namespace cohort::tools
