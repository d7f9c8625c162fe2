#include "perf_calibrate.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cohort.h"
#include "perf_cuda.h"
#include "perf_table.h"
#include "perf_tuning_file.h"
#include "coll/dtype.h"
#include "coll/select.h"

namespace cohort::perf {
namespace {

using coll::TuningCandidate;
using coll::TuningGrid;

std::vector<TuningCandidate> candidates_of(Collective c, cohort_memory_kind_t kind) {
  std::vector<TuningCandidate> out;
  for (const coll::AlgorithmInfo &info : coll::algorithm_table()) {
    if (info.collective != c || (info.memory & coll::memory_bit(kind)) == 0) continue;
    out.push_back({&info, 1});
    if (info.splits) out.push_back({&info, 2});
  }
  return out;
}

// Runs the sweep of one candidate and puts its times into the grid; the exit status.
int measure(const SweepOptions &opt, const Job &job, TuningGrid *grid, size_t k,
            SweepResult *result) {
  const TuningCandidate &cand = grid->candidates[k];
  const std::string rule = std::string(coll::collective_name(grid->collective)) + "@" +
                           (opt.memory == MemoryKind::kCuda ? "cuda-device" : "host") + "=" +
                           cand.label();
  setenv("COHORT_COLL_ALGO", rule.c_str(), 1);
  if (job.rank == 0) printf("#\n# --calibrate: COHORT_COLL_ALGO=%s\n", rule.c_str());
  fflush(stdout);
  SweepOptions one = opt;
  one.collectives = {grid->collective};
  // No size beyond what the algorithm takes: the selection would hand those to another rule.
  const size_t elem_size = coll::dtype_size(opt.dtype);
  one.max_bytes = 0;
  for (size_t bytes : sweep_sizes(opt)) {
    if (shape_of(grid->collective, bytes, elem_size, job.ranks).count * elem_size <=
        cand.algorithm->max_bytes) {
      one.max_bytes = bytes;
    }
  }
  if (one.max_bytes < one.min_bytes) return 0;
  one.json.clear();  // one sweep per candidate: the tuning file is the result
  const int rc = run_sweep(one, job, result);
  for (const Row &row : result->rows) {
    const double us = row.runs[0].time_us;
    if (row.shape.count == 0 || us <= 0) continue;
    const size_t bytes = row.shape.count * elem_size;
    size_t i = 0;
    while (i < grid->bytes.size() && grid->bytes[i] != bytes) ++i;
    if (i == grid->bytes.size()) {
      grid->bytes.push_back(bytes);
      for (auto &times : grid->us) times.push_back(-1);
    }
    grid->us[k][i] = us;
  }
  return rc;
}

}  // namespace

int run_calibrate(const SweepOptions &opt, const Job &job) {
  const char *given = getenv("COHORT_COLL_ALGO");
  const std::string saved = given != nullptr ? given : "";
  if (given != nullptr && job.rank == 0) {
    fprintf(stderr, "cohort_perf: --calibrate sets COHORT_COLL_ALGO itself; '%s' is ignored\n",
            given);
  }
  // The GPU's name, for the file's machine line, before measuring (a run without one skips
  // in its first sweep).
  GpuBinding gpu;
  if (opt.memory == MemoryKind::kCuda) bind_gpu(MPI_COMM_WORLD, &gpu);
  const std::string machine = machine_text(gpu.name);
  const std::string unusable =
      first_error(MPI_COMM_WORLD, job.rank == 0 ? tuning_file_usable(opt.calibrate, machine) : "");
  if (!unusable.empty()) {
    if (job.rank == 0) fprintf(stderr, "cohort_perf: --calibrate: %s\n", unusable.c_str());
    return 1;
  }
  const cohort_memory_kind_t kind =
      opt.memory == MemoryKind::kCuda ? COHORT_MEMORY_CUDA_DEVICE : COHORT_MEMORY_HOST;
  const std::string memory = opt.memory == MemoryKind::kCuda ? "cuda-device" : "host";
  std::vector<TuningBlock> blocks;
  SweepResult last;
  int rc = 0;
  for (Collective c : opt.collectives) {
    TuningGrid grid{c, candidates_of(c, kind), {}, {}};
    if (grid.candidates.size() < 2) {
      if (job.rank == 0) {
        printf("#\n# --calibrate: %s has %s on %s memory: nothing to choose\n",
               coll::collective_name(c), grid.candidates.empty() ? "no algorithm" : "one algorithm",
               memory.c_str());
      }
      continue;
    }
    grid.us.assign(grid.candidates.size(), {});
    for (size_t k = 0; k < grid.candidates.size() && rc == 0; ++k) {
      rc = measure(opt, job, &grid, k, &last);
    }
    if (rc != 0) break;
    const std::string where =
        "ranks=" + std::to_string(job.ranks) + " hosts=" + std::to_string(last.nodes);
    const std::string key = std::string(coll::collective_name(c)) + "@" + memory + " " + where;
    blocks.push_back(
        {key, coll::tuning_comments(grid, key), coll::tuning_rules(grid, memory, where)});
  }
  if (given != nullptr) {
    setenv("COHORT_COLL_ALGO", saved.c_str(), 1);
  } else {
    unsetenv("COHORT_COLL_ALGO");
  }
  if (rc != 0) return rc;
  if (blocks.empty()) {
    if (job.rank == 0) fprintf(stderr, "cohort_perf: --calibrate: nothing was measured\n");
    return 1;
  }
  bool ok = true;
  if (job.rank == 0) {
    size_t rules = 0;
    const std::string why = write_tuning_file(opt.calibrate, machine, blocks, &rules);
    ok = why.empty();
    if (ok) {
      printf(
          "#\n# --calibrate: %zu rules in %s (machine: %s)\n"
          "# use them with COHORT_TUNING_FILE=%s on every rank\n",
          rules, opt.calibrate.c_str(), machine.c_str(), opt.calibrate.c_str());
    } else {
      fprintf(stderr, "cohort_perf: --calibrate: %s\n", why.c_str());
    }
  }
  int all = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all ? 0 : 1;
}

}  // namespace cohort::perf
