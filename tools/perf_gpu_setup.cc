#include "perf_gpu_setup.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "perf_job.h"
#include "perf_json.h"

namespace cohort::perf {

int graph_replays(const SweepOptions &opt) {
  if (opt.graph_ops <= 0) return 0;
  return std::max(1, (opt.iterations + opt.graph_ops - 1) / opt.graph_ops);
}

void prepare_comparisons(const SweepOptions &opt, GpuSetup *setup) {
  if (opt.roofline) {
    setup->copy_failed = measure_copy_bandwidth(MPI_COMM_WORLD, setup->gpu, &setup->copy);
  }
  if (!opt.vs_nccl) return;
  setup->nccl = load_nccl_for_job(MPI_COMM_WORLD, setup->gpu.ranks_per_gpu, &setup->nccl_skipped);
  if (!setup->nccl) return;
  setup->nccl_skipped = first_error(MPI_COMM_WORLD, setup->nccl->init(MPI_COMM_WORLD));
  if (!setup->nccl_skipped.empty()) setup->nccl.reset();
}

void print_gpu_header(const SweepOptions &opt, const GpuSetup &setup) {
  const GpuBinding &g = setup.gpu;
  printf(
      "# memory: cudaMalloc'd buffers on each rank's GPU (local rank %% GPUs; rank 0's: %s), %d "
      "rank(s) per GPU, %s; %s\n",
      g.name.c_str(), g.ranks_per_gpu,
      opt.register_buffers ? "registered with the team (cohort_mem_register)"
                           : "not registered (--no-register)",
      opt.blocking ? "blocking calls (--blocking: cohort_allreduce, ... on device buffers)"
                   : "stream-ordered calls (cohort_*_stream) on one non-blocking stream per rank");
  printf(
      "# time: per call, the slowest rank's: host clock around %d back-to-back enqueues and one "
      "cudaStreamSynchronize, / %d (as nccl-tests)\n",
      opt.iterations, opt.iterations);
  if (opt.graph_ops > 0) {
    printf(
        "# graph (column): per size %d calls captured into one CUDA graph, one warm-up replay, "
        "then %d timed replay(s): replay time / %d\n",
        opt.graph_ops, graph_replays(opt), opt.graph_ops);
  }
  if (opt.roofline && setup.copy.gbs > 0) {
    printf(
        "# roofline: cudaMemcpy device to device of %zu MiB, median of %d: %.1f GB/s (2 x bytes "
        "/ time; the slowest GPU's)\n"
        "#   an allreduce of S bytes per rank on a GPU of n = %d rank(s) takes at least "
        "2 x n x S / %.1f GB/s\n"
        "#   (every input read once, every output written once); roof (column) = that floor / "
        "time, in %%\n",
        setup.copy.bytes >> 20, setup.copy.runs, setup.copy.gbs, g.ranks_per_gpu, setup.copy.gbs);
  } else if (opt.roofline) {
    printf("# roofline: not measured: %s\n", setup.copy_failed.c_str());
  }
  if (setup.nccl) {
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    printf(
        "# nccl: NCCL %s (libnccl.so.2, NCCL_NVLS_ENABLE=%s): its call on the same buffers and "
        "stream, timed the same way (and replayed from a graph with --graph); ratio = Cohort "
        "time / NCCL time\n",
        setup.nccl->version().c_str(), nvls != nullptr ? nvls : "(unset)");
  } else if (opt.vs_nccl) {
    printf("# nccl: not compared: %s\n", setup.nccl_skipped.c_str());
  }
}

void add_gpu_json(const SweepOptions &opt, const GpuSetup &setup, nlohmann::ordered_json *doc) {
  nlohmann::ordered_json &d = *doc;
  d["timing"] =
      "host clock around ITERS back-to-back enqueues and one cudaStreamSynchronize, / ITERS";
  d["gpu"] = {{"name", setup.gpu.name}, {"ranks_per_gpu", setup.gpu.ranks_per_gpu}};
  d["graph_ops"] = opt.graph_ops;
  d["graph_replays"] = graph_replays(opt);
  if (opt.roofline) {
    d["copy_bandwidth_gbs"] = setup.copy.gbs > 0
                                  ? nlohmann::ordered_json(json_rounded(setup.copy.gbs, 3))
                                  : nlohmann::ordered_json(nullptr);
    d["copy_bytes"] = setup.copy.bytes;
    if (!setup.copy_failed.empty()) d["copy_failed"] = setup.copy_failed;
  }
  if (setup.nccl) d["nccl_version"] = setup.nccl->version();
  if (opt.vs_nccl && !setup.nccl) d["nccl_skipped"] = setup.nccl_skipped;
}

}  // namespace cohort::perf
