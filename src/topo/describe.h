// Text views of one host's topology, its paths and its rings, for `cohort_info --topo` and
// for logs: pure formatting, no I/O.  Every view names GPUs and NICs the same way: GPU<k> is
// the k-th GPU node in index order, NIC<k> the k-th NIC node; other nodes go by their id.
#pragma once

#include <string>
#include <vector>

#include "topo/paths.h"
#include "topo/search.h"
#include "topo/topo.h"

namespace cohort::topo {

// The name of every node, by node index ("GPU0", "NIC1", "cpu0", "net0", "nvswitch", ...).
std::vector<std::string> node_labels(const Topology &topo);

// The CPU (NUMA domain) closest to `node`: best path type, then widest, then fewest hops;
// -1 when no CPU is reachable.
int local_cpu(const Topology &topo, const Paths &paths, int node);

// Host, node counts, CPUs, GPUs, NICs, NVLinks per GPU and what detection assumed.
std::string describe_topology(const Topology &topo);

// Like `nvidia-smi topo -m`: the path type between every pair of GPUs and NICs with each
// one's local CPU and NUMA node, the same pairs' bandwidth, the transport each GPU pair takes
// at the P2P level in use, and a legend.
std::string describe_matrix(const Topology &topo, const Paths &paths);

// Channels, bandwidth, path types and search figures of `graph`, each ring, the intra-host
// tree chains, and (for `hosts` > 1) the double binary tree across hosts.
std::string describe_graph(const Topology &topo, const NodeGraph &graph, int hosts);

}  // namespace cohort::topo
