#include "perf_team.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cohort.h"
#include "core/clock.h"
#include "core/gpu_identity.h"

namespace cohort::perf {
namespace {

bool check(cohort_status_t s, const char *what) {
  if (s == COHORT_SUCCESS) return true;
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

}  // namespace

int run_team_create(const TeamCreateOptions &opt, const Job &job) {
  const int rank = job.rank, size = job.ranks;
  std::vector<double> create_ms, destroy_ms;
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  if (opt.host_only) config.cuda_device = COHORT_DEVICE_NONE;
  std::vector<std::vector<double>> phase_ms;  // [phase][iteration]: slowest rank's time
  std::vector<const char *> phase_names;
  for (int it = -opt.warmup; it < opt.iterations; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    cohort_team_t team = nullptr;
    int64_t t0 = cohort::now_ns();
    if (!check(cohort_team_create_mpi(MPI_COMM_WORLD, &config, &team), "team create")) return 1;
    int64_t t1 = cohort::now_ns();
    if (it == -opt.warmup) print_team(team, rank, size);
    cohort_init_report_t report;
    if (it >= 0 && check(cohort_team_init_report(team, &report), "init report")) {
      phase_ms.resize(report.num_phases);
      phase_names.resize(report.num_phases);
      for (int p = 0; p < report.num_phases; ++p) {
        phase_ms[p].push_back(report.phases[p].max_ns / 1e6);
        phase_names[p] = report.phases[p].name;
      }
    }
    int64_t t2 = cohort::now_ns();
    if (!check(cohort_team_destroy(team), "team destroy")) return 1;
    int64_t t3 = cohort::now_ns();
    double local[2] = {(t1 - t0) / 1e6, (t3 - t2) / 1e6}, slowest[2];
    MPI_Allreduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it < 0) continue;
    create_ms.push_back(slowest[0]);
    destroy_ms.push_back(slowest[1]);
    if (rank == 0 && (it + 1) % 10 == 0) {
      fprintf(stderr, "cohort_perf: %d/%d iterations\n", it + 1, opt.iterations);
    }
  }
  if (rank != 0) return 0;
  Stats c = stats_of(create_ms), d = stats_of(destroy_ms);
  printf("# %-14s %6s %10s %10s %10s\n", "operation", "ranks", "min ms", "median ms", "max ms");
  printf("  %-14s %6d %10.3f %10.3f %10.3f\n", "team-create", size, c.min_ms, c.median_ms,
         c.max_ms);
  printf("  %-14s %6d %10.3f %10.3f %10.3f\n", "team-destroy", size, d.min_ms, d.median_ms,
         d.max_ms);
  for (size_t p = 0; p < phase_ms.size(); ++p) {
    Stats ps = stats_of(phase_ms[p]);
    printf("  %-14s %6d %10.3f %10.3f %10.3f\n", phase_names[p], size, ps.min_ms, ps.median_ms,
           ps.max_ms);
  }
  printf("# team-create median over %d iterations (slowest rank each): %.3f ms\n", opt.iterations,
         c.median_ms);
  if (!opt.json.empty()) {
    FILE *f = fopen(opt.json.c_str(), "w");
    if (f == nullptr) {
      perror(opt.json.c_str());
      return 1;
    }
    fprintf(f,
            "{\"benchmark\": \"team-create\", \"ranks\": %d, \"iterations\": %d, "
            "\"create_ms\": {\"min\": %.6f, \"median\": %.6f, \"max\": %.6f}, "
            "\"destroy_ms\": {\"min\": %.6f, \"median\": %.6f, \"max\": %.6f}}\n",
            size, opt.iterations, c.min_ms, c.median_ms, c.max_ms, d.min_ms, d.median_ms, d.max_ms);
    fclose(f);
  }
  return 0;
}

}  // namespace cohort::perf
