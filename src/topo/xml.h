// The topology model as XML (libxml2): COHORT_TOPO_DUMP_FILE writes it, COHORT_TOPO_FILE
// loads it in place of detection, so a test or a user can reproduce any machine.
//
// Format (one element per node and per undirected link; attributes in a fixed order):
//   <cohort_topology version="1" host="...">
//     <cpu id="cpu0" numa="0" arch="x86_64" vendor="intel"/>
//     <pci id="0000:15:00.0"/>
//     <gpu id="0000:17:00.0" sm="90" uuid="..."/>
//     <nvswitch id="nvswitch"/>
//     <nic id="0000:18:00.0" name="mlx5_0" speed="400"/>
//     <net id="net0" name="mlx5_0"/>
//     <link a="cpu0" b="0000:15:00.0" type="pci" gen="5" width="16" bw="50.4"/>
//     <link a="0000:17:00.0" b="nvswitch" type="nvlink" count="18" bw="370.8"/>
//     <link a="cpu0" b="cpu1" type="cpu" bw="10"/>
//     <assumed text="..."/>
//   </cohort_topology>
// A link's `bw` (GB/s per direction) may be left out: loading computes it from the
// bandwidth table (count x NVLink rate of the GPU's sm, PCIe gen x width, CPU vendor, NIC
// speed).  `bw_back` gives the b -> a direction when it differs.  Node references are ids;
// an id shared by two node types (a NIC and its net port never share) is an error.
#pragma once

#include <string>

#include "topo/topo.h"

namespace cohort::topo {

// The canonical text of `topo` (canonicalize() it first for a stable order).
std::string to_xml(const Topology &topo);
Status write_xml_file(const Topology &topo, const std::string &path);

// Parses `text`; errors (COHORT_ERR_INVALID_ARG) name `source` and the line:
// "topology file f.xml line 12: link b='x': no node with this id".  Never crashes on any input.
Status from_xml(const std::string &text, const std::string &source, Topology *out);
Status read_xml_file(const std::string &path, Topology *out);

}  // namespace cohort::topo
