// TEMPORARY (being written): returns NOT_SUPPORTED.
#include "topo/graph_xml.h"
namespace cohort::topo {
std::string graph_to_xml(const Topology &, const NodeGraph &) { return ""; }
Status write_graph_file(const Topology &, const NodeGraph &, const std::string &) {
  return fail(COHORT_ERR_NOT_SUPPORTED, "graph files: not yet");
}
Status graph_from_xml(const std::string &, const std::string &, const Topology &, const Paths &,
                      const std::vector<int> &, NodeGraph *) {
  return fail(COHORT_ERR_NOT_SUPPORTED, "graph files: not yet");
}
Status read_graph_file(const std::string &, const Topology &, const Paths &,
                       const std::vector<int> &, NodeGraph *) {
  return fail(COHORT_ERR_NOT_SUPPORTED, "graph files: not yet");
}
}  // namespace cohort::topo
