// What -m cuda adds to the sweep: the GPU each rank bound, the GPU's copy bandwidth
// (--roofline) and NCCL (--vs-nccl), and how the header and the JSON file describe them.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "perf_cuda.h"
#include "perf_nccl.h"
#include "perf_sweep.h"

namespace cohort::perf {

struct GpuSetup {
  GpuBinding gpu;
  CopyBandwidth copy;          // gbs 0: not measured
  std::string copy_failed;     // why --roofline measured nothing, or ""
  std::unique_ptr<Nccl> nccl;  // with its communicator; null when NCCL does not run
  std::string nccl_skipped;    // why not, or ""
};

// --graph: timed replays enough for ITERS calls (at least one).
int graph_replays(const SweepOptions &opt);

// Collective, once the team exists: the copy bandwidth and NCCL's communicator, as asked.
void prepare_comparisons(const SweepOptions &opt, GpuSetup *setup);

// The header's lines on memory, timing, --graph, --roofline and --vs-nccl (rank 0).
void print_gpu_header(const SweepOptions &opt, const GpuSetup &setup);

// The same in the JSON document: timing, gpu, graph_ops, copy_bandwidth_gbs, nccl_version...
void add_gpu_json(const SweepOptions &opt, const GpuSetup &setup, nlohmann::ordered_json *doc);

}  // namespace cohort::perf
