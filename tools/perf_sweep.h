// cohort_perf's collective sweep (-c): each collective over a range of sizes on one team over
// MPI_COMM_WORLD, printed as nccl-tests prints its tables (out-of-place, then in place),
// optionally validated (--check) and timed against the matching MPI call (--vs-mpi).  On host
// memory the team is host-only and the calls blocking; with -m cuda every rank binds a GPU,
// the calls are the stream-ordered ones on device buffers, optionally also replayed from CUDA
// graphs (--graph), set against the GPU's copy bandwidth (--roofline) and against NCCL
// (--vs-nccl).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cohort.h"
#include "perf_job.h"
#include "perf_memory.h"
#include "coll/schedule.h"

namespace cohort::perf {

struct SweepOptions {
  std::vector<coll::Collective> collectives;
  size_t min_bytes = 8;
  size_t max_bytes = 64 << 20;
  size_t factor = 2;
  cohort_dtype_t dtype = COHORT_FLOAT32;
  cohort_op_t op = COHORT_SUM;
  int iterations = 20;
  int warmup = 5;
  int root = 0;
  bool out_of_place = true;
  bool in_place = true;
  bool check = false;
  bool vs_mpi = false;
  std::string json;  // rank 0 writes every row here when set
  MemoryKind memory = MemoryKind::kHost;
  int graph_ops = 0;             // --graph N: calls per CUDA graph; 0: no graphs
  bool roofline = false;         // --roofline
  bool register_buffers = true;  // cuda: cohort_mem_register both buffers (--no-register: not)
  bool vs_nccl = false;          // --vs-nccl
  bool blocking = false;         // cuda: the blocking calls, not the stream-ordered ones
  std::string calibrate;         // --calibrate FILE: the tuning file to write (perf_calibrate.h)
};

// The sizes min, min * factor, ... up to max (bytes).
std::vector<size_t> sweep_sizes(const SweepOptions &opt);

// Runs the sweep on every rank; rank 0 prints.  Returns the exit status: 0, 1 when the team
// could not be created, --check found wrong elements, or the JSON file could not be written,
// or kExitSkipped when -m cuda finds no GPU (or no CUDA in the build).  A collective that fails
// prints its error and aborts the job (its peers would otherwise wait in it until
// COHORT_COLL_TIMEOUT).
// `result` (may be null; perf_table.h) gets the rows and where the team ran, for --calibrate.
struct SweepResult;
int run_sweep(const SweepOptions &opt, const Job &job, SweepResult *result = nullptr);

}  // namespace cohort::perf
