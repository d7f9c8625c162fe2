#include <hwloc.h>
#include <ucp/api/ucp.h>

#include "cohort.h"
#include "core/build_info.h"
#include "core/build_info_text.h"
#include "core/mpi_hooks.h"
#include "core/cuda_driver.h"
#include "core/gpu_identity.h"
#include "core/status.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cohort {
namespace {

// "12.4" from a CUDA version number (12040).
std::string cuda_version_number(int version) {
  return strprintf("%d.%d", version / 1000, (version % 1000) / 10);
}

std::string cuda_text() {
#if COHORT_HAVE_CUDA
  return "toolkit " + cuda_version_number(CUDART_VERSION) + " (built against); " +
         cuda_build_description();
#else
  return "not built";
#endif
}

std::string mpi_text() {
  if (mpi_hooks().library_version == nullptr) return "not loaded (this library has no MPI part)";
  std::string mpi = mpi_hooks().library_version();
  if (size_t nl = mpi.find_first_of(",\n"); nl != std::string::npos) mpi.resize(nl);
  return mpi;
}

}  // namespace

std::string version_text() {
  return strprintf("%d.%d.%d (git %s)", COHORT_VERSION_MAJOR, COHORT_VERSION_MINOR,
                   COHORT_VERSION_PATCH, COHORT_GIT_REVISION);
}

std::string cuda_driver_text() {
  const int version = cuda_driver_version();
  return version > 0 ? "NVIDIA driver for CUDA " + cuda_version_number(version)
                     : "no NVIDIA driver";
}

std::string build_description() {
  unsigned hwloc = hwloc_get_api_version();
  std::string out = "Cohort " + version_text() + "\n";
  std::string configure = COHORT_CONFIGURE_ARGS;  // autoconf's list starts with a space
  configure.erase(0, configure.find_first_not_of(' '));
  out += strprintf("  configure:  %s\n", configure.c_str());
  out += strprintf("  MPI:        %s\n", mpi_text().c_str());
  out += strprintf("  UCX:        %s (built against %s)\n", ucp_get_version_string(),
                   COHORT_UCX_VERSION);
  out += strprintf("  hwloc:      API %u.%u.%u (built against release %s)\n", hwloc >> 16,
                   (hwloc >> 8) & 0xff, hwloc & 0xff, COHORT_HWLOC_VERSION);
  out += strprintf("  CUDA:       %s\n", cuda_text().c_str());
  out += strprintf("  driver:     %s\n", cuda_driver_text().c_str());
  return out;
}

}  // namespace cohort
