#include <hwloc.h>
#include <mpi.h>
#include <ucp/api/ucp.h>

#include "cohort.h"
#include "core/build_info.h"
#include "core/build_info_text.h"
#include "core/gpu_identity.h"
#include "core/status.h"

namespace cohort {

std::string build_description() {
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi_version, &len);
  std::string mpi(mpi_version, len);
  if (size_t nl = mpi.find_first_of(",\n"); nl != std::string::npos) mpi.resize(nl);
  unsigned hwloc = hwloc_get_api_version();
  std::string out = strprintf("Cohort %d.%d.%d\n", COHORT_VERSION_MAJOR, COHORT_VERSION_MINOR,
                              COHORT_VERSION_PATCH);
  out += strprintf("  configure:  %s\n", COHORT_CONFIGURE_ARGS);
  out += strprintf("  MPI:        %s\n", mpi.c_str());
  out += strprintf("  UCX:        %s (built against %s)\n", ucp_get_version_string(),
                   COHORT_UCX_VERSION);
  out += strprintf("  hwloc:      API %u.%u.%u (built against release %s)\n", hwloc >> 16,
                   (hwloc >> 8) & 0xff, hwloc & 0xff, COHORT_HWLOC_VERSION);
  std::string cuda = cuda_build_description();
  out += strprintf("  CUDA:       %s\n", cuda.empty() ? "not built" : cuda.c_str());
  return out;
}

}  // namespace cohort
