// libFuzzer target for the topology loader (src/topo/xml.cc): any bytes either load as a
// topology or are refused with an error naming the source; nothing crashes, leaks or hangs.
// What loads must hold the model's invariants, dump to XML that loads again to the same dump,
// and give paths and a ring search (the work after loading that the limits bound).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/status.h"
#include "topo/paths.h"
#include "topo/search.h"
#include "topo/xml.h"

namespace {

using namespace cohort::topo;

// A broken invariant is a finding: abort, so libFuzzer keeps the input.
void require(bool holds) {
  if (!holds) abort();
}

void check_loaded(const Topology &topo) {
  require(validate(topo) == COHORT_SUCCESS);
  const std::string dump = to_xml(topo);
  Topology again;
  require(from_xml(dump, "dump.xml", &again) == COHORT_SUCCESS);
  require(to_xml(again) == dump);
  // Paths and a small search on every input that loads: bounded by the limits and the budget.
  const Paths paths(topo);
  SearchOptions options;
  options.budget = 20000;
  options.cross_node = topo.nodes.size() % 2 == 1;  // both kinds of ring, input-chosen
  const NodeGraph graph = search_rings(topo, paths, topo.of_type(NodeType::kGpu), options);
  require(graph.steps <= options.budget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  Topology topo;
  const cohort::Status s = from_xml(text, "fuzz.xml", &topo);
  if (s == COHORT_SUCCESS) {
    check_loaded(topo);
    return 0;
  }
  require(s == COHORT_ERR_INVALID_ARG || s == COHORT_ERR_NO_MEMORY);
  require(cohort::last_error().rfind("topology file fuzz.xml", 0) == 0);
  return 0;
}
