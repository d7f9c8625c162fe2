#include "perf_team.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort_mpi.h"
#include "core/clock.h"
#include "core/gpu_identity.h"
#include "perf_cuda.h"
#include "perf_json.h"
#include "perf_memory.h"
#include "perf_nccl.h"
#include "perf_progress.h"

namespace cohort::perf {
namespace {

bool check(cohort_status_t s, const char *what) {
  if (s == COHORT_SUCCESS) return true;
  progress_clear();
  fprintf(stderr, "cohort_perf: %s: %s: %s\n", what, cohort_status_string(s), cohort_last_error());
  return false;
}

void print_team(cohort_team_t team, int rank, int size) {
  if (rank != 0) return;
  int nodes = 0;
  cohort_team_node_count(team, &nodes);
  printf("# team: %d ranks on %d node(s)\n", size, nodes);
  printf("# %5s %-16s %5s %6s %8s %5s %-13s %-40s %5s\n", "rank", "host", "node", "local", "pid",
         "cuda", "bus id", "gpu uuid", "numa");
  for (int r = 0; r < size; ++r) {
    cohort_peer_info_t p;
    if (!check(cohort_team_peer_info(team, r, &p), "peer_info")) return;
    printf("# %5d %-16s %5d %6d %8d %5d %-13s %-40s %5d\n", r, p.hostname, p.node_index,
           p.local_rank, p.pid, p.cuda_device, p.bus_id[0] ? p.bus_id : "-",
           p.cuda_device >= 0 ? cohort::format_uuid(p.uuid).c_str() : "-", p.numa_node);
  }
  char report[4096];
  if (check(cohort_team_init_report_format(team, report, sizeof(report)), "init report")) {
    printf("# first team's %s", report);
  }
}

struct Stats {
  double min_ms, median_ms, max_ms;
};

Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[(v.size() - 1) / 2], v.back()};
}

// The slowest rank's time of every timed iteration, in ms.
struct Timings {
  double first_create_ms = 0;  // the first team's, untimed iterations included
  std::vector<double> create_ms, destroy_ms;
  std::vector<std::vector<double>> phase_ms;  // [phase][iteration]
  std::vector<const char *> phase_names;
};

void add_phases(cohort_team_t team, Timings *t) {
  cohort_init_report_t report;
  if (!check(cohort_team_init_report(team, &report), "init report")) return;
  t->phase_ms.resize(report.num_phases);
  t->phase_names.resize(report.num_phases);
  for (int p = 0; p < report.num_phases; ++p) {
    t->phase_ms[p].push_back(report.phases[p].max_ns / 1e6);
    t->phase_names[p] = report.phases[p].name;
  }
}

// One iteration: create a team, destroy it; timed ones go to *t.  False when a call failed
// (printed).
bool run_iteration(const cohort_team_config_t &config, const Job &job, bool first, bool timed,
                   Timings *t) {
  MPI_Barrier(MPI_COMM_WORLD);
  cohort_team_t team = nullptr;
  const int64_t t0 = now_ns();
  if (!check(cohort_team_create_mpi(MPI_COMM_WORLD, &config, &team), "team create")) return false;
  const int64_t t1 = now_ns();
  if (first) print_team(team, job.rank, job.ranks);
  if (timed) add_phases(team, t);
  const int64_t t2 = now_ns();
  if (!check(cohort_team_destroy(team), "team destroy")) return false;
  const int64_t t3 = now_ns();
  double local[2] = {(t1 - t0) / 1e6, (t3 - t2) / 1e6}, slowest[2];
  MPI_Allreduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (first) t->first_create_ms = slowest[0];
  if (timed) {
    t->create_ms.push_back(slowest[0]);
    t->destroy_ms.push_back(slowest[1]);
  }
  return true;
}

// --vs-nccl: NCCL's communicator creation, timed as Cohort's teams (the slowest rank's) once
// they are done: as many untimed and timed iterations, each communicator destroyed.
struct NcclTimings {
  std::string version;
  std::string skipped;  // why NCCL did not run, or ""
  double first_ms = 0;  // the first communicator's
  std::vector<double> init_ms;
};

// One ncclGetUniqueId + MPI_Bcast + ncclCommInitRank, then ncclCommDestroy: the slowest
// rank's creation time in *ms; "" or the error.
std::string nccl_iteration(Nccl *nccl, double *ms) {
  MPI_Barrier(MPI_COMM_WORLD);
  const int64_t t0 = now_ns();
  std::string why = nccl->init(MPI_COMM_WORLD);
  double local = (now_ns() - t0) / 1e6;
  if (why.empty()) why = nccl->destroy();
  MPI_Allreduce(&local, ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return first_error(MPI_COMM_WORLD, why);
}

NcclTimings time_nccl(const TeamCreateOptions &opt, const GpuBinding &gpu) {
  NcclTimings t;
  std::unique_ptr<Nccl> nccl = load_nccl_for_job(MPI_COMM_WORLD, gpu.ranks_per_gpu, &t.skipped);
  if (!nccl) return t;
  t.version = nccl->version();
  for (int it = -opt.warmup; it < opt.iterations && t.skipped.empty(); ++it) {
    progress_show("ncclCommInitRank, " + std::to_string(std::max(it + 1, 0)) + "/" +
                  std::to_string(opt.iterations) + " iterations");
    double ms = 0;
    t.skipped = nccl_iteration(nccl.get(), &ms);
    if (it == -opt.warmup) t.first_ms = ms;
    if (it >= 0) t.init_ms.push_back(ms);
  }
  return t;
}

// -m cuda: the device memory a team takes by its first allreduce, and an NCCL communicator
// (--vs-nccl), as its GPU's free memory drops: each GPU's lowest rank measures before the
// creation and after every rank's allreduce is done; the most over the GPUs, in MiB (a GPU's
// ranks together).  -1 where it did not run.
struct MemoryUse {
  double team_mib = -1;
  double nccl_mib = -1;
};

// Collective: create runs on every rank, then one 1-element allreduce on `memory`; the drop
// in free memory per GPU then; release() after.  -1 when a step failed on some rank.
double memory_taken_mib(const GpuBinding &gpu, SweepMemory *memory,
                        const std::function<bool()> &create,
                        const std::function<bool(const Call &)> &allreduce,
                        const std::function<void()> &release) {
  Call call;
  call.send = memory->buffers().input;
  call.recv = memory->buffers().output;
  call.count = 1;
  MPI_Barrier(MPI_COMM_WORLD);
  const double before = gpu.gpu_leader ? static_cast<double>(gpu_free_bytes()) : 0;
  MPI_Barrier(MPI_COMM_WORLD);
  int ok = create() ? 1 : 0;
  if (ok) ok = allreduce(call) && memory->synchronize().empty();
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const double after = gpu.gpu_leader ? static_cast<double>(gpu_free_bytes()) : 0;
  MPI_Barrier(MPI_COMM_WORLD);
  release();
  double drop = gpu.gpu_leader && before > 0 ? (before - after) / 1048576.0 : 0, most = 0;
  MPI_Allreduce(&drop, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all ? most : -1;
}

MemoryUse measure_memory(const cohort_team_config_t &config, const GpuBinding &gpu,
                         bool with_nccl) {
  MemoryUse use;
  std::unique_ptr<SweepMemory> memory = make_device_memory();
  if (!memory || !first_error(MPI_COMM_WORLD, memory->allocate(256)).empty()) return use;
  cohort_team_t team = nullptr;
  use.team_mib = memory_taken_mib(
      gpu, memory.get(),
      [&] { return check(cohort_team_create_mpi(MPI_COMM_WORLD, &config, &team), "team create"); },
      [&](const Call &call) { return check(memory->run(team, call), "allreduce"); },
      [&] {
        if (team != nullptr) cohort_team_destroy(team);
      });
  if (!with_nccl) return use;
  std::string why;
  std::unique_ptr<Nccl> nccl = load_nccl_for_job(MPI_COMM_WORLD, gpu.ranks_per_gpu, &why);
  if (!nccl) return use;
  use.nccl_mib = memory_taken_mib(
      gpu, memory.get(), [&] { return nccl->init(MPI_COMM_WORLD).empty(); },
      [&](const Call &call) { return nccl->run(call, memory->stream()).empty(); },
      [&] { nccl->destroy(); });
  return use;
}

void print_memory(const MemoryUse &use) {
  if (use.team_mib < 0) return;
  printf(
      "# device memory by the first allreduce (the GPU's free memory, cudaMemGetInfo): team "
      "%.1f MiB",
      use.team_mib);
  if (use.nccl_mib > 0) {
    printf(", NCCL communicator %.1f MiB: Cohort / NCCL %.3f", use.nccl_mib,
           use.team_mib / use.nccl_mib);
  }
  printf("\n");
}

void print_row(const char *operation, int ranks, const Stats &s) {
  printf("  %-14s %6d %11.3f %11.3f %11.3f\n", operation, ranks, s.min_ms, s.median_ms, s.max_ms);
}

void print_nccl(const Timings &t, const NcclTimings &nccl) {
  if (!nccl.skipped.empty()) {
    printf("# vs NCCL: not compared: %s\n", nccl.skipped.c_str());
    return;
  }
  const double cohort_median = stats_of(t.create_ms).median_ms;
  const double nccl_median = stats_of(nccl.init_ms).median_ms;
  printf("# nccl-comm-init: NCCL %s, ncclGetUniqueId (rank 0) + MPI_Bcast + ncclCommInitRank\n",
         nccl.version.c_str());
  printf(
      "# first after the CUDA context: team-create %.3f ms, nccl-comm-init %.3f ms: Cohort / "
      "NCCL %.3f\n",
      t.first_create_ms, nccl.first_ms, t.first_create_ms / nccl.first_ms);
  printf("# median: team-create %.3f ms, nccl-comm-init %.3f ms: Cohort / NCCL %.3f\n",
         cohort_median, nccl_median, cohort_median / nccl_median);
}

void print_results(const Timings &t, const NcclTimings *nccl, const MemoryUse &memory, int ranks) {
  printf("# %-14s %6s %11s %11s %11s\n", "operation", "ranks", "min (ms)", "median (ms)",
         "max (ms)");
  print_row("team-create", ranks, stats_of(t.create_ms));
  print_row("team-destroy", ranks, stats_of(t.destroy_ms));
  for (size_t p = 0; p < t.phase_ms.size(); ++p) {
    print_row(t.phase_names[p], ranks, stats_of(t.phase_ms[p]));
  }
  if (nccl != nullptr && nccl->skipped.empty()) {
    print_row("nccl-comm-init", ranks, stats_of(nccl->init_ms));
  }
  printf("# team-create median over %zu iterations (slowest rank each): %.3f ms\n",
         t.create_ms.size(), stats_of(t.create_ms).median_ms);
  if (nccl != nullptr) print_nccl(t, *nccl);
  print_memory(memory);
}

nlohmann::ordered_json stats_json(const std::vector<double> &ms) {
  const Stats s = stats_of(ms);
  return {{"min", json_rounded(s.min_ms, 6)},
          {"median", json_rounded(s.median_ms, 6)},
          {"max", json_rounded(s.max_ms, 6)}};
}

bool write_json(const TeamCreateOptions &opt, const Timings &t, const NcclTimings *nccl,
                const MemoryUse &memory, const Job &job) {
  nlohmann::ordered_json doc = json_header("team-create", job);
  doc["iterations"] = opt.iterations;
  doc["host_only"] = opt.host_only;
  doc["memory"] = opt.cuda ? "cuda" : "host";
  doc["units"] = {{"create_ms", "ms"}, {"destroy_ms", "ms"}, {"phases_ms", "ms"}};
  doc["first_create_ms"] = json_rounded(t.first_create_ms, 6);
  doc["create_ms"] = stats_json(t.create_ms);
  doc["destroy_ms"] = stats_json(t.destroy_ms);
  nlohmann::ordered_json phases = nlohmann::ordered_json::object();
  for (size_t p = 0; p < t.phase_ms.size(); ++p)
    phases[t.phase_names[p]] = stats_json(t.phase_ms[p]);
  doc["phases_ms"] = std::move(phases);
  if (memory.team_mib >= 0) doc["device_memory_mib"] = json_rounded(memory.team_mib, 3);
  if (nccl != nullptr && !nccl->skipped.empty()) doc["nccl_skipped"] = nccl->skipped;
  if (nccl != nullptr && nccl->skipped.empty()) {
    const double cohort_median = stats_of(t.create_ms).median_ms;
    const double nccl_median = stats_of(nccl->init_ms).median_ms;
    doc["nccl"] = {{"version", nccl->version},
                   {"what", "ncclGetUniqueId + MPI_Bcast + ncclCommInitRank"},
                   {"first_init_ms", json_rounded(nccl->first_ms, 6)},
                   {"init_ms", stats_json(nccl->init_ms)},
                   {"ratio_first", json_rounded(t.first_create_ms / nccl->first_ms, 6)},
                   {"ratio_median", json_rounded(cohort_median / nccl_median, 6)}};
    if (memory.nccl_mib > 0) doc["nccl"]["device_memory_mib"] = json_rounded(memory.nccl_mib, 3);
  }
  return write_json_file(opt.json, doc);
}

}  // namespace

int run_team_create(const TeamCreateOptions &opt, const Job &job) {
  GpuBinding gpu;
  if (opt.cuda) {
    const std::string why = bind_gpu(MPI_COMM_WORLD, &gpu);
    if (!why.empty()) {
      if (job.rank == 0) fprintf(stderr, "cohort_perf: -m cuda: skipped: %s\n", why.c_str());
      return kExitSkipped;
    }
  }
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  if (opt.host_only) config.cuda_device = COHORT_DEVICE_NONE;
  if (opt.cuda) config.cuda_device = gpu.device;
  Timings timings;
  progress_start(job.rank == 0);
  for (int it = -opt.warmup; it < opt.iterations; ++it) {
    if (!run_iteration(config, job, it == -opt.warmup, it >= 0, &timings)) {
      if (job.rank == 0) print_shared_gpu_hint(gpu);
      return 1;
    }
    progress_show("team-create, " + std::to_string(std::max(it + 1, 0)) + "/" +
                  std::to_string(opt.iterations) + " iterations");
  }
  NcclTimings nccl;
  if (opt.vs_nccl) nccl = time_nccl(opt, gpu);
  MemoryUse memory;
  if (opt.cuda) memory = measure_memory(config, gpu, opt.vs_nccl && nccl.skipped.empty());
  progress_clear();
  if (job.rank != 0) return 0;
  const NcclTimings *compared = opt.vs_nccl ? &nccl : nullptr;
  print_results(timings, compared, memory, job.ranks);
  return opt.json.empty() || write_json(opt, timings, compared, memory, job) ? 0 : 1;
}

}  // namespace cohort::perf
