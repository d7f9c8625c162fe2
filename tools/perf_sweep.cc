#include "perf_sweep.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cohort.hpp"
#include "core/clock.h"
#include "perf_check.h"
#include "perf_coll.h"
#include "perf_cuda.h"
#include "perf_gpu_setup.h"
#include "perf_json.h"
#include "perf_progress.h"
#include "perf_table.h"
#include "coll/dtype.h"

namespace cohort::perf {
namespace {

// A collective that does not run on the GPU (the probe's outcome, the same on every rank).
struct Skipped {
  Collective collective;
  cohort_status_t status;
  std::string message;
};

class Sweep {
 public:
  Sweep(const SweepOptions &opt, cohort::Team team, const Job &job,
        std::unique_ptr<SweepMemory> memory, GpuSetup gpu)
      : opt_(opt),
        team_(std::move(team)),
        job_(job),
        rank_(job.rank),
        size_(job.ranks),
        memory_(std::move(memory)),
        gpu_(std::move(gpu)),
        table_(opt, job.ranks, Roofline{gpu_.copy.gbs, gpu_.gpu.ranks_per_gpu},
               gpu_.nccl != nullptr) {}

  bool allocate_buffers();
  void print_header() const;
  void run_collective(Collective c, const std::vector<size_t> &sizes, int *done, int total);
  int finish() const;
  void report(SweepResult *result) const;

 private:
  bool on_device() const { return opt_.memory == MemoryKind::kCuda; }
  bool runs_on_gpu(Collective c, const std::vector<size_t> &sizes);
  template <class Once>
  double time_loop(int warmup, int iterations, const Once &once) const;
  Measurement measure(const CallArgs &args, const Pattern &pattern);
  template <class Run>
  double time_graph(const Call &call, const char *who, const Run &run);
  long long check(const Call &call, const Shape &shape);
  [[noreturn]] void fail(const Call &call, const char *who, const char *status,
                         const std::string &detail) const;
  void or_fail(const Call &call, const char *what, const std::string &error) const;
  void stage(const Call &call, const Shape &shape) const;
  void run_cohort_once(const Call &call) const;
  void run_mpi_once(const Call &call) const;
  bool write_json() const;

  SweepOptions opt_;
  cohort::Team team_;
  Job job_;
  int rank_, size_;
  std::unique_ptr<SweepMemory> memory_;
  GpuSetup gpu_;
  Table table_;
  std::vector<char> staging_, expected_;  // host memory: inputs and results pass through them
  std::vector<Row> rows_;
  std::vector<Skipped> skipped_;
};

bool Sweep::allocate_buffers() {
  // Every collective's send and receive buffers fit in the largest size (shape_of).
  const size_t bytes = std::max<size_t>(opt_.max_bytes, 1);
  std::string why = memory_->allocate(bytes);
  why = first_error(MPI_COMM_WORLD, why);  // registering is collective: every rank, or none
  if (why.empty() && opt_.register_buffers) why = memory_->register_buffers(team_.get());
  if (why.empty()) {
    try {
      staging_.assign(bytes, 0);
      if (opt_.check) expected_.assign(bytes, 0);
    } catch (const std::bad_alloc &) {
      why = "cannot allocate host buffers of " + std::to_string(bytes) + " bytes";
    }
  }
  why = first_error(MPI_COMM_WORLD, why);
  if (!why.empty() && rank_ == 0) fprintf(stderr, "cohort_perf: %s\n", why.c_str());
  return why.empty();
}

// Calls once() `warmup` times, waits for them, then times `iterations` calls and waits for
// them: the slowest rank's time per call in us.
template <class Once>
double Sweep::time_loop(int warmup, int iterations, const Once &once) const {
  for (int i = 0; i < warmup; ++i) once();
  const std::string warm = memory_->synchronize();
  MPI_Barrier(MPI_COMM_WORLD);
  const int64_t start = now_ns();
  for (int i = 0; i < iterations; ++i) once();
  const std::string timed = memory_->synchronize();
  double us = (now_ns() - start) / 1e3 / iterations;
  if (!warm.empty() || !timed.empty()) {
    progress_clear();
    fprintf(stderr, "cohort_perf: rank %d: %s\n", rank_, (warm.empty() ? timed : warm).c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return us;
}

void Sweep::fail(const Call &call, const char *who, const char *status,
                 const std::string &detail) const {
  progress_clear();
  fprintf(stderr, "cohort_perf: rank %d: %s %s of %zu %s elements (%s) failed: %s: %s\n", rank_,
          who, coll::collective_name(call.collective), call.count, coll::dtype_name(call.dtype),
          call.in_place ? "in place" : "out of place", status, detail.c_str());
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  abort();  // MPI_Abort does not return
}

void Sweep::or_fail(const Call &call, const char *what, const std::string &error) const {
  if (!error.empty()) fail(call, what, "error", error);
}

void Sweep::stage(const Call &call, const Shape &shape) const {
  or_fail(call, "staging the input of",
          memory_->copy(in_place_copy(call, shape, memory_->buffers())));
}

void Sweep::run_cohort_once(const Call &call) const {
  const cohort_status_t s = memory_->run(team_.get(), call);
  if (s != COHORT_SUCCESS) fail(call, "Cohort", cohort_status_string(s), cohort_last_error());
}

void Sweep::run_mpi_once(const Call &call) const {
  const int rc = run_mpi(MPI_COMM_WORLD, call);
  if (rc == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, message, &length);
  fail(call, "MPI", "MPI error", message);
}

// On the GPU, one call of the first size that moves data tells whether the collective runs
// there: NOT_SUPPORTED (and any other refusal) comes from the checks before anything is
// enqueued, the same on every rank.  Prints why not and returns false when it does not run.
bool Sweep::runs_on_gpu(Collective c, const std::vector<size_t> &sizes) {
  if (!on_device()) return true;
  const size_t elem_size = coll::dtype_size(opt_.dtype);
  CallArgs args;
  args.collective = c;
  args.dtype = opt_.dtype;
  args.op = opt_.op;
  args.root = opt_.root;
  args.rank = rank_;
  args.ranks = size_;
  for (size_t bytes : sizes) {
    args.shape = shape_of(c, bytes, elem_size, size_);
    if (args.shape.count > 0 || c == Collective::kBarrier) break;
  }
  if (args.shape.count == 0 && c != Collective::kBarrier) return true;  // nothing to enqueue
  const Call call = make_call(args, memory_->buffers());
  const cohort_status_t s = memory_->run(team_.get(), call);
  const std::string message = s == COHORT_SUCCESS ? "" : cohort_last_error();
  if (s == COHORT_SUCCESS) or_fail(call, "waiting for", memory_->synchronize());
  int range[2] = {s, -s};  // the lowest and (negated) the highest status
  MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const std::string agreed = first_error(MPI_COMM_WORLD, message);
  if (range[0] == COHORT_SUCCESS && range[1] == COHORT_SUCCESS) return true;
  if (range[0] != -range[1]) {
    if (rank_ == 0) {
      fprintf(stderr, "cohort_perf: %s on the GPU: ranks disagree: %s\n", coll::collective_name(c),
              agreed.c_str());
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  skipped_.push_back({c, s, agreed});
  if (rank_ != 0) return false;
  progress_clear();
  if (s == COHORT_ERR_NOT_SUPPORTED) {
    printf("#\n# %s: not on the GPU yet: %s\n", coll::collective_name(c), agreed.c_str());
  } else {
    printf("#\n# %s: cannot run on the GPU: %s: %s\n", coll::collective_name(c),
           cohort_status_string(s), agreed.c_str());
  }
  fflush(stdout);
  return false;
}

// Captures opt_.graph_ops calls of run() (Cohort's or NCCL's: "" or the error) into a CUDA
// graph, replays it once, then times enough replays for ITERS calls: the time per call.
template <class Run>
double Sweep::time_graph(const Call &call, const char *who, const Run &run) {
  StreamGraph graph;
  const std::string why = graph.capture(memory_->stream(), opt_.graph_ops, run);
  or_fail(call, (std::string("capturing a CUDA graph of ") + who).c_str(), why);
  const double per_replay = time_loop(1, graph_replays(opt_), [&] {
    or_fail(call, (std::string("replaying the CUDA graph of ") + who).c_str(),
            graph.launch(memory_->stream()));
  });
  return per_replay / opt_.graph_ops;
}

// Runs the call `iterations` more times, untimed, each on fresh inputs and a poisoned output,
// and counts the wrong elements over all of them and all ranks.  The output passes through
// host memory (staging_) both ways.
long long Sweep::check(const Call &call, const Shape &shape) {
  const Region out = output_region(call);
  const Region host{staging_.data(), out.count};
  const size_t elem_size = coll::dtype_size(call.dtype), bytes = out.count * elem_size;
  long long wrong = 0;
  for (int it = 0; it < opt_.iterations; ++it) {
    poison(host, expected_.data(), elem_size);
    or_fail(call, "poisoning the output of", memory_->upload(out.data, host.data, bytes));
    stage(call, shape);
    run_cohort_once(call);
    or_fail(call, "reading the output of", memory_->synchronize());
    or_fail(call, "reading the output of", memory_->download(host.data, out.data, bytes));
    wrong += static_cast<long long>(count_wrong(host, expected_.data(), elem_size));
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

Measurement Sweep::measure(const CallArgs &args, const Pattern &pattern) {
  const Call call = make_call(args, memory_->buffers());
  Measurement m;
  stage(call, args.shape);
  m.time_us = time_loop(opt_.warmup, opt_.iterations, [&] { run_cohort_once(call); });
  const bool graph = opt_.graph_ops > 0 && call.count > 0;
  if (graph) {
    m.graph_us = time_graph(call, "Cohort's", [&]() -> std::string {
      const cohort_status_t s = memory_->run(team_.get(), call);
      return s == COHORT_SUCCESS
                 ? ""
                 : std::string(cohort_status_string(s)) + ": " + cohort_last_error();
    });
  }
  if (opt_.check) {
    expected_output(call, pattern, expected_.data());
    m.wrong = check(call, args.shape);
  }
  if (gpu_.nccl && Nccl::unavailable(call.collective) == nullptr) {
    const auto nccl = [&] { return gpu_.nccl->run(call, memory_->stream()); };
    stage(call, args.shape);
    m.nccl_us = time_loop(opt_.warmup, opt_.iterations, [&] { or_fail(call, "NCCL", nccl()); });
    if (graph) m.nccl_graph_us = time_graph(call, "NCCL's", nccl);
  }
  if (opt_.vs_mpi) {
    m.mpi_na = mpi_unavailable(call);
    if (m.mpi_na == nullptr) {
      stage(call, args.shape);
      m.mpi_us = time_loop(opt_.warmup, opt_.iterations, [&] { run_mpi_once(call); });
    }
  }
  return m;
}

void Sweep::run_collective(Collective c, const std::vector<size_t> &sizes, int *done, int total) {
  // The barrier moves no data: one row.
  const std::vector<size_t> barrier_sizes = {0};
  const std::vector<size_t> &own_sizes = c == Collective::kBarrier ? barrier_sizes : sizes;
  if (!runs_on_gpu(c, sizes)) {
    *done += static_cast<int>(own_sizes.size());
    return;
  }
  const bool reduction = reduces(c);
  // Data movement needs no particular values: the sum pattern is the most varied.
  const Pattern pattern(opt_.dtype, reduction ? opt_.op : COHORT_SUM, size_);
  const size_t elem_size = coll::dtype_size(opt_.dtype);
  if (rank_ == 0) table_.print_header(c);
  for (size_t bytes : own_sizes) {
    progress_show("[" + std::to_string(*done + 1) + "/" + std::to_string(total) + "] " +
                  coll::collective_name(c) + " " + std::to_string(bytes) + " B");
    Row row;
    row.collective = c;
    row.shape = shape_of(c, bytes, elem_size, size_);
    CallArgs args;
    args.collective = c;
    args.shape = row.shape;
    args.dtype = opt_.dtype;
    args.op = opt_.op;
    args.root = opt_.root;
    args.rank = rank_;
    args.ranks = size_;
    // Every size starts from the same input; in-place runs copy it into the output buffer.
    const size_t input_bytes = row.shape.send_count * elem_size;
    pattern.input(rank_, 0, row.shape.send_count, staging_.data());
    const Call first = make_call(args, memory_->buffers());
    or_fail(first, "writing the input of",
            memory_->upload(const_cast<char *>(memory_->buffers().input), staging_.data(),
                            input_bytes));
    for (int p = 0; p < kPlacements; ++p) {
      if (!table_.placed(p)) continue;
      args.in_place = p == 1;
      row.runs[p] = measure(args, pattern);
    }
    rows_.push_back(row);
    if (rank_ == 0) {
      progress_clear();
      table_.print_row(row);
    }
    ++*done;
  }
}

void Sweep::print_header() const {
  if (rank_ != 0) return;
  printf("# cohort_perf: collective sweep on %d rank(s), %d node(s), %s memory\n", size_,
         team_.node_count(), on_device() ? "GPU device" : "host");
  printf(
      "# minBytes %zu B maxBytes %zu B step: x%zu (factor) warmup iters: %d iters: %d "
      "validation: %d vs-mpi: %d",
      opt_.min_bytes, opt_.max_bytes, opt_.factor, opt_.warmup, opt_.iterations, opt_.check,
      opt_.vs_mpi);
  if (on_device()) {
    printf(" vs-nccl: %d graph: %d roofline: %d registered: %d", opt_.vs_nccl, opt_.graph_ops,
           opt_.roofline, opt_.register_buffers);
  }
  printf("\n");
  if (on_device()) {
    print_gpu_header(opt_, gpu_);
  } else {
    printf("# time: average per iteration of the slowest rank over %d iterations\n",
           opt_.iterations);
  }
  if (opt_.check) {
    printf("# check: each size reruns %d times untimed, every result compared bit for bit\n",
           opt_.iterations);
  }
  for (int r = 0; r < size_; ++r) {
    const cohort_peer_info_t p = team_.peer(r);
    printf("#  rank %3d  pid %7d  on %s (node %d, local rank %d", r, p.pid, p.hostname,
           p.node_index, p.local_rank);
    if (on_device()) printf(", GPU %d %s", p.cuda_device, p.bus_id);
    printf(")\n");
  }
  fflush(stdout);
}

bool Sweep::write_json() const {
  if (rank_ != 0 || opt_.json.empty()) return true;
  nlohmann::ordered_json doc = json_header("collectives", job_);
  doc["nodes"] = team_.node_count();
  doc["memory"] = memory_name(opt_.memory);
  doc["iterations"] = opt_.iterations;
  doc["warmup"] = opt_.warmup;
  doc["check"] = opt_.check;
  doc["vs_mpi"] = opt_.vs_mpi;
  doc["min_bytes"] = opt_.min_bytes;
  doc["max_bytes"] = opt_.max_bytes;
  doc["factor"] = opt_.factor;
  if (on_device()) {
    add_gpu_json(opt_, gpu_, &doc);
    doc["registered"] = opt_.register_buffers;
    nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
    for (const Skipped &k : skipped_) {
      skipped.push_back({{"collective", coll::collective_name(k.collective)},
                         {"status", cohort_status_string(k.status)},
                         {"message", k.message}});
    }
    doc["not_on_gpu"] = std::move(skipped);
  }
  doc["units"] = table_.units_json();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Row &row : rows_) {
    for (int p = 0; p < kPlacements; ++p) {
      if (row.runs[p].time_us >= 0) rows.push_back(table_.row_json(row, p));
    }
  }
  doc["rows"] = std::move(rows);
  return write_json_file(opt_.json, doc);
}

int Sweep::finish() const {
  long long wrong = 0;
  double busbw_sum = 0;
  int busbw_rows = 0;
  const int p = table_.summary_placement();
  for (const Row &row : rows_) {
    for (const Measurement &m : row.runs) wrong += std::max(m.wrong, 0ll);
    if (!moves_data(row)) continue;
    busbw_sum += algbw_gbs(row, row.runs[p].time_us) * busbw_factor(row.collective, size_);
    ++busbw_rows;
  }
  if (rank_ == 0) table_.print_summary(rows_, wrong);
  const bool json_ok = write_json();
  if (rank_ == 0) {
    printf("# Avg bus bandwidth (GB/s): %.3f over %d %s rows (count > 0)\n",
           busbw_rows > 0 ? busbw_sum / busbw_rows : 0.0, busbw_rows, kPlacementNames[p]);
    fflush(stdout);
  }
  return wrong > 0 || !json_ok ? 1 : 0;
}

void Sweep::report(SweepResult *result) const {
  if (result == nullptr) return;
  result->rows = rows_;
  result->nodes = team_.node_count();
}

}  // namespace

std::vector<size_t> sweep_sizes(const SweepOptions &opt) {
  std::vector<size_t> sizes;
  for (size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= opt.factor) {
    sizes.push_back(bytes);
    if (opt.factor < 2 || bytes > opt.max_bytes / opt.factor) break;
  }
  return sizes;
}

int run_sweep(const SweepOptions &opt, const Job &job, SweepResult *result) {
  GpuSetup setup;
  const bool device = opt.memory == MemoryKind::kCuda;
  const std::string no_gpu = device ? bind_gpu(MPI_COMM_WORLD, &setup.gpu) : "";
  if (!no_gpu.empty()) {
    if (job.rank == 0) fprintf(stderr, "cohort_perf: -m cuda: skipped: %s\n", no_gpu.c_str());
    return kExitSkipped;
  }
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  config.cuda_device = device ? setup.gpu.device : COHORT_DEVICE_NONE;
  config.name = "cohort_perf";
  cohort::Team team;
  try {
    team = cohort::Team(MPI_COMM_WORLD, &config);
  } catch (const cohort::Error &e) {
    // Every rank gets the same outcome; one message is enough.
    if (job.rank == 0) {
      fprintf(stderr, "cohort_perf: team create: %s\n", e.what());
      print_shared_gpu_hint(setup.gpu);
    }
    return 1;
  }
  if (device) prepare_comparisons(opt, &setup);
  std::unique_ptr<SweepMemory> memory =
      device ? make_device_memory(opt.blocking) : make_host_memory();
  Sweep sweep(opt, std::move(team), job, std::move(memory), std::move(setup));
  progress_start(job.rank == 0);
  if (!sweep.allocate_buffers()) return 1;
  sweep.print_header();
  const std::vector<size_t> sizes = sweep_sizes(opt);
  int total = 0, done = 0;
  for (Collective c : opt.collectives) {
    total += c == Collective::kBarrier ? 1 : static_cast<int>(sizes.size());
  }
  for (Collective c : opt.collectives) sweep.run_collective(c, sizes, &done, total);
  sweep.report(result);
  return sweep.finish();
}

}  // namespace cohort::perf
