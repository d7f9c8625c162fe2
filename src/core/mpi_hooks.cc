#include "core/mpi_hooks.h"

namespace cohort {

MpiHooks &mpi_hooks() {
  static MpiHooks hooks;
  return hooks;
}

bool mpi_usable_now() {
  const MpiHooks &h = mpi_hooks();
  return h.usable != nullptr && h.usable();
}

}  // namespace cohort
