// This host's topology for team creation: loaded from COHORT_TOPO_FILE or detected, once per
// process (later teams reuse it), and dumped to COHORT_TOPO_DUMP_FILE when asked.
#pragma once

#include <memory>
#include <string>

#include "topo/topo.h"

namespace cohort::topo {

struct HostTopology {
  std::shared_ptr<const Topology> topology;
  bool from_file = false;
  std::string source;  // the file, or "detected"
};

Status host_topology(HostTopology *out);

// A dump-file pattern with %h (host) and %p (pid) expanded, as COHORT_DEBUG_FILE's.
std::string expand_dump_path(const std::string &pattern);

}  // namespace cohort::topo
