// What host_colls_test's files share: ranks on fake hosts, and the v-variants' scenarios
// (host_vcolls.cc).
#pragma once

#include <algorithm>
#include <string>

#include "test_support.h"

namespace mpi_test {

// Ranks on fake hosts of K ranks (UCX between them) with --per-node K.
struct FakeHosts {
  std::string host = "colls-node-" + std::to_string(g_rank / std::max(opt_int("per-node", 1), 1));
  ScopedEnv env{"COHORT_HOST_ID",
                opt_int("per-node", 0) > 0 ? host.c_str() : getenv("COHORT_HOST_ID")};
};

void scenario_vmatrix();
void scenario_verrors();

}  // namespace mpi_test
