// Team creation, planning phases: topology -> graphs -> align.  Each host's leader (local
// rank 0) detects or loads the host topology and searches its rings; the hosts' summaries are
// exchanged, every rank builds the same plan from them, and the plans' hashes are compared.

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "core/params.h"
#include "team/rank_list.h"
#include "team/creation.h"
#include "topo/bandwidth.h"
#include "topo/graph_xml.h"
#include "topo/host.h"

namespace cohort {
namespace {

Status p2p_level(topo::PathType *out) {
  int choice = 0;
  Status s = param_enum("P2P_LEVEL", &choice);
  if (is_error(s)) return s;
  // AUTO, then LOC..SYS in PathType order.
  *out = choice == 0 ? topo::PathType::kCount : static_cast<topo::PathType>(choice - 1);
  return COHORT_SUCCESS;
}

// A GPU of a rank that the topology lacks (a hidden PCI tree): attach it to the CPU of its
// NUMA node, and say so.
int attach_missing_gpu(topo::Topology *topo, const PeerRecord &peer) {
  std::vector<int> cpus = topo->of_type(topo::NodeType::kCpu);
  int cpu = cpus.empty() ? -1 : cpus[0];
  for (int c : cpus) {
    if (topo->nodes[c].numa == peer.numa_node) cpu = c;
  }
  topo::Node gpu;
  gpu.type = topo::NodeType::kGpu;
  gpu.id = topo::normalize_bus_id(peer.bus_id);
  int index = topo->add_node(gpu);
  if (cpu >= 0) topo->connect(index, cpu, topo::LinkType::kPci, topo::pci_bw(0, 0));
  topo->assumptions.push_back(strprintf("GPU %s of a rank is not in the topology: attached to %s",
                                        gpu.id.c_str(),
                                        cpu >= 0 ? topo->nodes[cpu].id.c_str() : "nothing"));
  return index;
}

}  // namespace

Status Creation::prepare_topology(std::vector<char> *) {
  if (!parts_.info.is_host_leader(parts_.info.rank)) return COHORT_SUCCESS;
  return guarded("topology", [&] { return load_topology(); });
}

// Leader: the host's model with every local rank's GPU in it (a detected model; a loaded
// file stands for another machine, whose GPUs the ranks then play), and its paths.
Status Creation::load_topology() {
  const TeamInfo &info = parts_.info;
  topo::HostTopology host;
  Status s = topo::host_topology(&host);
  if (is_error(s)) return s;
  auto topology = std::make_shared<topo::Topology>(*host.topology);
  const int node = info.layout.node_of_rank[info.rank];
  bool added = false;
  for (int r = 0; r < info.size && !host.from_file; ++r) {
    if (info.layout.node_of_rank[r] != node || info.peers[r].cuda_device < 0) continue;
    std::string bus = topo::normalize_bus_id(info.peers[r].bus_id);
    if (topology->find(topo::NodeType::kGpu, bus) >= 0) continue;
    attach_missing_gpu(topology.get(), info.peers[r]);
    COHORT_LOG_WARN(TOPO, "%s: %s", info.name.c_str(), topology->assumptions.back().c_str());
    added = true;
  }
  if (added) topo::canonicalize(topology.get());
  topo::PathOptions options;
  if (s = p2p_level(&options.p2p_level); is_error(s)) return s;
  paths_ = std::make_unique<topo::Paths>(*topology, options);
  topology_ = std::move(topology);
  topology_from_file_ = host.from_file;
  return COHORT_SUCCESS;
}

Status Creation::prepare_graphs(std::vector<char> *part) {
  const TeamInfo &info = parts_.info;
  local_max_ = *std::max_element(info.layout.local_size.begin(), info.layout.local_size.end());
  std::vector<int32_t> words(topo::summary_words(local_max_), 0);
  Status s = COHORT_SUCCESS;
  if (info.is_host_leader(info.rank))
    s = guarded("graph search", [&] { return host_graph(&words); });
  part->assign(reinterpret_cast<const char *>(words.data()),
               reinterpret_cast<const char *>(words.data() + words.size()));
  return s;
}

Status Creation::finish_graphs() {
  const TeamInfo &info = parts_.info;
  const size_t words = topo::summary_words(local_max_);
  summaries_.assign(static_cast<size_t>(info.layout.node_count) * words, 0);
  for (int r = 0; r < info.size; ++r) {
    if (!info.is_host_leader(r)) continue;
    std::memcpy(&summaries_[info.layout.node_of_rank[r] * words], part_of(r),
                words * sizeof(int32_t));
  }
  return COHORT_SUCCESS;
}

// Leader: the local ranks and their GPUs, the host's rings, their summary.
Status Creation::host_graph(std::vector<int32_t> *words) {
  const TeamInfo &info = parts_.info;
  const int node = info.layout.node_of_rank[info.rank];
  std::vector<int> file_gpus = topology_->of_type(topo::NodeType::kGpu);
  std::vector<topo::LocalRank> locals;
  std::vector<int> gpus;
  for (int r = 0; r < info.size; ++r) {
    if (info.layout.node_of_rank[r] != node) continue;
    const PeerRecord &peer = info.peers[r];
    topo::LocalRank local{r, -1, peer.numa_node};
    if (peer.cuda_device >= 0) {
      local.gpu = topology_->find(topo::NodeType::kGpu, topo::normalize_bus_id(peer.bus_id));
    }
    if (local.gpu < 0 && topology_from_file_ && !file_gpus.empty()) {
      // Reproducing another machine from its file: local rank i plays its i-th GPU.
      local.gpu = file_gpus[info.layout.local_rank[r] % file_gpus.size()];
    }
    if (local.gpu >= 0 && std::find(gpus.begin(), gpus.end(), local.gpu) == gpus.end()) {
      gpus.push_back(local.gpu);
    }
    locals.push_back(local);
  }
  std::sort(gpus.begin(), gpus.end());
  topo::NodeGraph graph;
  Status s = search_or_load(gpus, &graph);
  if (is_error(s)) return s;
  topo::NodeSummary summary = topo::summarize_node(graph, locals);
  topo::pack_summary(summary, local_max_, words->data());
  return COHORT_SUCCESS;
}

Status Creation::search_or_load(const std::vector<int> &gpus, topo::NodeGraph *graph) {
  if (gpus.empty()) {
    COHORT_LOG_INFO(GRAPH, "%s: no rank of this host uses a GPU: rings follow ranks by NUMA node",
                    parts_.info.name.c_str());
    *graph = topo::NodeGraph{};
    return COHORT_SUCCESS;
  }
  std::string file, dump;
  int64_t budget = 0;
  Status s = param_string("GRAPH_FILE", &file);
  if (!is_error(s)) s = param_string("GRAPH_DUMP_FILE", &dump);
  if (!is_error(s)) s = param_int("SEARCH_BUDGET", &budget);
  if (is_error(s)) return s;
  if (!file.empty()) {
    s = topo::read_graph_file(file, *topology_, *paths_, gpus, graph);
    if (is_error(s)) return failf(s, "COHORT_GRAPH_FILE: %s", last_error().c_str());
  } else {
    topo::SearchOptions options;
    options.cross_node = parts_.info.layout.node_count > 1;
    options.budget = budget;
    *graph = topo::search_rings(*topology_, *paths_, gpus, options);
  }
  if (graph->fallback) {
    COHORT_LOG_WARN(GRAPH,
                    "%s: ring search found nothing within %ld hop evaluations: using GPUs in bus "
                    "order (COHORT_SEARCH_BUDGET raises the budget)",
                    parts_.info.name.c_str(), graph->steps);
  }
  COHORT_LOG_INFO(GRAPH,
                  "%s: host graph (%s): %zu GPUs, %zu channels x %.1f GB/s, %s within "
                  "the host, %s to the network, %ld hops weighed",
                  parts_.info.name.c_str(), file.empty() ? "searched" : file.c_str(), gpus.size(),
                  graph->rings.size(), graph->bw, topo::path_type_name(graph->intra_type),
                  topo::path_type_name(graph->net_type), graph->steps);
  if (!dump.empty() &&
      is_error(topo::write_graph_file(*topology_, *graph, topo::expand_dump_path(dump)))) {
    COHORT_LOG_WARN(GRAPH, "COHORT_GRAPH_DUMP_FILE: %s", last_error().c_str());  // an aid only
  }
  return COHORT_SUCCESS;
}

Status Creation::prepare_align(std::vector<char> *part) {
  const TeamInfo &info = parts_.info;
  Status s = guarded("plan", [&] { return build_plan(); });
  uint64_t hash = info.plan.hash;
  const InjectedFailure &inject = parts_.config.inject;
  if (inject.active && inject.skew && inject.rank == info.rank) hash ^= 1;
  part->assign(reinterpret_cast<const char *>(&hash), reinterpret_cast<const char *>(&hash + 1));
  return s;
}

Status Creation::finish_align() { return compare_plan_hashes(); }

Status Creation::build_plan() {
  TeamInfo &info = parts_.info;
  const size_t words = topo::summary_words(local_max_);
  std::vector<topo::NodeSummary> nodes(info.layout.node_count);
  for (int n = 0; n < info.layout.node_count; ++n) {
    Status s = topo::unpack_summary(&summaries_[n * words], local_max_, info.size, &nodes[n]);
    if (is_error(s)) return failf(s, "graph summary of host %d: %s", n, last_error().c_str());
  }
  summaries_.clear();
  return topo::align_plan(nodes, info.size, &info.plan);
}

// Every rank sees every hash, so every rank names the same ranks.
Status Creation::compare_plan_hashes() {
  const TeamInfo &info = parts_.info;
  uint64_t reference = 0;
  std::memcpy(&reference, part_of(0), sizeof(reference));
  std::vector<int> differ;
  for (int r = 1; r < info.size; ++r) {
    uint64_t hash = 0;
    std::memcpy(&hash, part_of(r), sizeof(hash));
    if (hash != reference) differ.push_back(r);
  }
  if (differ.empty()) return COHORT_SUCCESS;
  return failf(COHORT_ERR_INVALID_USAGE,
               "team creation failed in phase align: %zu of %d ranks built a plan different from "
               "rank 0's (hash %016llx): ranks %s; the first is %s. The ranks disagree on the "
               "rings and trees: do they run the same Cohort build?",
               differ.size(), info.size, static_cast<unsigned long long>(reference),
               format_rank_list(differ).c_str(), info.describe(differ[0]).c_str());
}

}  // namespace cohort
