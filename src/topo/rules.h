// What a topology must be beyond well-formed XML: the limits that keep paths, ring search and
// the plan small, the node kinds each link type joins, and physical ranges.  Topology files
// are input (a user writes them by hand), so the loader (xml.cc) checks every rule here and
// quotes its name in the error: "... (rule: link type matches its ends)".
#pragma once

#include <vector>

#include "topo/topo.h"

namespace cohort::topo::rules {

// Nodes and links per host.  A DGX H100 has ~60 nodes and ~90 links; 4096 nodes leave room
// for 256 GPUs each behind their own switches with NICs beside them, and keep the path table
// (sources x nodes, paths.h) under ~70 MB and its computation under a second.
constexpr int kMaxNodes = 4096;
constexpr int kMaxLinks = 4 * kMaxNodes;  // a tree has one per node; NVLink meshes add <= 18/GPU

// The most nodes of one kind a host may have; 0: only kMaxNodes bounds it.
int max_nodes_of(NodeType type);
// "GPUs per host", for messages.
const char *limit_name(NodeType type);

// Link bandwidth in GB/s per direction: from a PCIe Gen1 x1 lane's tenth to far above any
// fabric (NVLink5 x18 is 720), so that sums and ratios of them stay finite and exact enough.
constexpr double kMinBw = 0.01;
constexpr double kMaxBw = 100000;

// Null when a `type` link may join nodes of kinds a and b (in either order); otherwise what
// such a link joins ("a net link must join a NIC to its network port").
const char *link_ends_problem(LinkType type, NodeType a, NodeType b);

// GPUs with no path to any CPU over the PCI tree (PCI links through PCI switches): paths and
// SHM need one, and NVLink alone does not make it (GPUs relay NVLink only to NVLink).
std::vector<int> gpus_without_cpu(const Topology &topo);

}  // namespace cohort::topo::rules
