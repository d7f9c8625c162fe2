// A host's searched rings as XML: COHORT_GRAPH_DUMP_FILE writes them, COHORT_GRAPH_FILE
// loads them in place of the search (to reproduce or hand-tune a plan).
//
//   <cohort_graph version="1" host="..." channels="2" bw="20" intra="NVL" net="LOC"
//                 fallback="0" steps="123">
//     <channel net="net0">             (net only for rings that leave the host)
//       <gpu id="0000:18:00.0"/> ...   (ring order, entry GPU first)
//     </channel>
//   </cohort_graph>
#pragma once

#include <string>
#include <vector>

#include "topo/search.h"
#include "topo/topo.h"

namespace cohort::topo {

std::string graph_to_xml(const Topology &topo, const NodeGraph &graph);
Status write_graph_file(const Topology &topo, const NodeGraph &graph, const std::string &path);

// Reads rings for the GPUs `gpus` (node indices of `topo`): every channel must hold each of
// them exactly once and nothing else, and name an existing net node or none.  bw, intra and
// net are then recomputed from `paths` (measure_graph), keeping the file's bw when lower.
// Errors name `source` and the line, as topology files do.
Status graph_from_xml(const std::string &text, const std::string &source, const Topology &topo,
                      const Paths &paths, const std::vector<int> &gpus, NodeGraph *out);
Status read_graph_file(const std::string &path, const Topology &topo, const Paths &paths,
                       const std::vector<int> &gpus, NodeGraph *out);

}  // namespace cohort::topo
