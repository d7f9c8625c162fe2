#include "perf_sweep.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cohort.hpp"
#include "core/clock.h"
#include "perf_check.h"
#include "perf_coll.h"
#include "perf_json.h"
#include "perf_progress.h"
#include "coll/dtype.h"

namespace cohort::perf {
namespace {

constexpr int kPlacements = 2;  // 0: out of place, 1: in place
const char *const kPlacementNames[kPlacements] = {"out-of-place", "in-place"};

// One placement's results; negative / nullptr fields were not measured.
struct Measurement {
  double time_us = -1;
  long long wrong = -1;
  double mpi_us = -1;
  const char *mpi_na = nullptr;  // why MPI could not make the call
};

struct Row {
  Collective collective = Collective::kAllreduce;
  Shape shape;
  Measurement runs[kPlacements];
};

struct FreeDeleter {
  void operator()(char *p) const { free(p); }
};
using HostBuffer = std::unique_ptr<char, FreeDeleter>;

// Page-aligned and touched, so that no run pays for first-touch page faults.
HostBuffer allocate(size_t bytes) {
  constexpr size_t kPage = 4096;
  const size_t rounded = (bytes + kPage - 1) / kPage * kPage + kPage;
  HostBuffer buffer(static_cast<char *>(aligned_alloc(kPage, rounded)));
  if (buffer) memset(buffer.get(), 0, rounded);
  return buffer;
}

std::string format_time(double us) {
  char text[32];
  snprintf(text, sizeof text, us < 1e4 ? "%.2f" : us < 1e6 ? "%.1f" : "%.0f", us);
  return text;
}

double algbw_gbs(const Row &row, double us) { return us > 0 ? row.shape.bytes / (us * 1e3) : 0; }

// A row that moves no data (count 0, or the barrier) has no bandwidth.
bool moves_data(const Row &row) { return row.shape.bytes > 0; }

// Cohort time / MPI time, which says nothing when neither moves data (count 0): the
// barrier's, which synchronizes, is kept.
bool has_ratio(const Row &row) { return moves_data(row) || row.collective == Collective::kBarrier; }

// "%.2f" of a value, or "-" where it means nothing.
std::string format_or_dash(bool meaningful, double value) {
  if (!meaningful) return "-";
  char text[32];
  snprintf(text, sizeof text, "%.2f", value);
  return text;
}

class Sweep {
 public:
  Sweep(const SweepOptions &opt, cohort::Team team, const Job &job)
      : opt_(opt), team_(std::move(team)), job_(job), rank_(job.rank), size_(job.ranks) {}

  bool allocate_buffers();
  void print_header() const;
  void run_collective(Collective c, const std::vector<size_t> &sizes, int *done, int total);
  int finish() const;

 private:
  template <class Once>
  double time_loop(const Once &once) const;
  Measurement measure(const CallArgs &args, const Pattern &pattern);
  long long check(const Call &call, const Shape &shape);
  [[noreturn]] void fail(const Call &call, const char *who, const char *status,
                         const char *detail) const;
  void run_cohort_once(const Call &call) const;
  void run_mpi_once(const Call &call) const;
  void print_table_header(Collective c) const;
  void print_row(const Row &row) const;
  void print_summary(long long wrong) const;
  nlohmann::ordered_json row_json(const Row &row, int placement) const;
  bool write_json() const;

  SweepOptions opt_;
  cohort::Team team_;
  Job job_;
  int rank_, size_;
  HostBuffer input_, output_, expected_;
  std::vector<Row> rows_;
};

bool Sweep::allocate_buffers() {
  // Every collective's send and receive buffers fit in the largest size (shape_of).
  const size_t bytes = std::max<size_t>(opt_.max_bytes, 1);
  input_ = allocate(bytes);
  output_ = allocate(bytes);
  if (opt_.check) expected_ = allocate(bytes);
  int ok = input_ && output_ && (expected_ || !opt_.check);
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok && rank_ == 0) {
    fprintf(stderr, "cohort_perf: cannot allocate %d buffers of %zu bytes on some rank\n",
            opt_.check ? 3 : 2, bytes);
  }
  return ok;
}

template <class Once>
double Sweep::time_loop(const Once &once) const {
  for (int i = 0; i < opt_.warmup; ++i) once();
  MPI_Barrier(MPI_COMM_WORLD);
  const int64_t start = now_ns();
  for (int i = 0; i < opt_.iterations; ++i) once();
  double us = (now_ns() - start) / 1e3 / opt_.iterations;
  MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return us;
}

void Sweep::fail(const Call &call, const char *who, const char *status, const char *detail) const {
  progress_clear();
  fprintf(stderr, "cohort_perf: rank %d: %s %s of %zu %s elements (%s) failed: %s: %s\n", rank_,
          who, coll::collective_name(call.collective), call.count, coll::dtype_name(call.dtype),
          call.in_place ? "in place" : "out of place", status, detail);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  abort();  // MPI_Abort does not return
}

void Sweep::run_cohort_once(const Call &call) const {
  const cohort_status_t s = run_cohort(team_.get(), call);
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

// Runs the call `iterations` more times, untimed, each on fresh inputs and a poisoned output,
// and counts the wrong elements over all of them and all ranks.
long long Sweep::check(const Call &call, const Shape &shape) {
  const Region out = output_region(call);
  const size_t elem_size = coll::dtype_size(call.dtype);
  const Buffers buffers{input_.get(), output_.get()};
  long long wrong = 0;
  for (int it = 0; it < opt_.iterations; ++it) {
    poison(out, expected_.get(), elem_size);
    stage_in_place(call, shape, buffers);
    run_cohort_once(call);
    wrong += static_cast<long long>(count_wrong(out, expected_.get(), elem_size));
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

Measurement Sweep::measure(const CallArgs &args, const Pattern &pattern) {
  const Buffers buffers{input_.get(), output_.get()};
  const Call call = make_call(args, buffers);
  Measurement m;
  stage_in_place(call, args.shape, buffers);
  m.time_us = time_loop([&] { run_cohort_once(call); });
  if (opt_.check) {
    expected_output(call, pattern, expected_.get());
    m.wrong = check(call, args.shape);
  }
  if (opt_.vs_mpi) {
    m.mpi_na = mpi_unavailable(call);
    if (m.mpi_na == nullptr) {
      stage_in_place(call, args.shape, buffers);
      m.mpi_us = time_loop([&] { run_mpi_once(call); });
    }
  }
  return m;
}

void Sweep::run_collective(Collective c, const std::vector<size_t> &sizes, int *done, int total) {
  const bool reduction = reduces(c);
  // Data movement needs no particular values: the sum pattern is the most varied.
  const Pattern pattern(opt_.dtype, reduction ? opt_.op : COHORT_SUM, size_);
  const size_t elem_size = coll::dtype_size(opt_.dtype);
  print_table_header(c);
  // The barrier moves no data: one row.
  const std::vector<size_t> barrier_sizes = {0};
  for (size_t bytes : c == Collective::kBarrier ? barrier_sizes : sizes) {
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
    pattern.input(rank_, 0, row.shape.send_count, input_.get());
    for (int p = 0; p < kPlacements; ++p) {
      if (!(p == 0 ? opt_.out_of_place : opt_.in_place)) continue;
      args.in_place = p == 1;
      row.runs[p] = measure(args, pattern);
    }
    rows_.push_back(row);
    print_row(row);
    ++*done;
  }
}

void Sweep::print_header() const {
  if (rank_ != 0) return;
  printf("# cohort_perf: collective sweep on %d rank(s), %d node(s), host memory\n", size_,
         team_.node_count());
  printf(
      "# minBytes %zu B maxBytes %zu B step: x%zu (factor) warmup iters: %d iters: %d "
      "validation: %d vs-mpi: %d\n",
      opt_.min_bytes, opt_.max_bytes, opt_.factor, opt_.warmup, opt_.iterations, opt_.check,
      opt_.vs_mpi);
  printf("# time: average per iteration of the slowest rank over %d iterations\n", opt_.iterations);
  if (opt_.check) {
    printf("# check: each size reruns %d times untimed, every result compared bit for bit\n",
           opt_.iterations);
  }
  for (int r = 0; r < size_; ++r) {
    const cohort_peer_info_t p = team_.peer(r);
    printf("#  rank %3d  pid %7d  on %s (node %d, local rank %d)\n", r, p.pid, p.hostname,
           p.node_index, p.local_rank);
  }
  fflush(stdout);
}

// Column widths: the common prefix, then per placement time, algbw, busbw, #wrong, and with
// --vs-mpi the MPI time and the ratio.
constexpr const char *kPrefixFormat = "%12s  %12s  %8s  %6s  %6s";
constexpr const char *kHeaderPrefixFormat = "#%11s  %12s  %8s  %6s  %6s";  // same widths
constexpr int kPrefixWidth = 52, kRunWidth = 37, kMpiWidth = 19;
constexpr const char *kRunFormat = "  %9s  %7s  %7s  %6s";
constexpr const char *kMpiFormat = "  %9s  %6s";

void Sweep::print_table_header(Collective c) const {
  if (rank_ != 0) return;
  if (c == Collective::kBarrier) {
    printf("#\n# barrier: moves no data, runs once\n");
  } else {
    printf("#\n# %s: busbw = algbw x %.3g\n", coll::collective_name(c), busbw_factor(c, size_));
  }
  const int group_width = kRunWidth + (opt_.vs_mpi ? kMpiWidth : 0);
  std::string titles = "#" + std::string(kPrefixWidth - 1, ' ');
  for (int p = 0; p < kPlacements; ++p) {
    if (!(p == 0 ? opt_.out_of_place : opt_.in_place)) continue;
    std::string title = kPlacementNames[p];
    const int pad = group_width - static_cast<int>(title.size());
    titles += std::string(pad / 2, ' ') + title + std::string(pad - pad / 2, ' ');
  }
  titles.erase(titles.find_last_not_of(' ') + 1);
  printf("%s\n", titles.c_str());
  const char *lines[2][8] = {{"size", "count", "type", "redop", "root", "time", "algbw", "busbw"},
                             {"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)"}};
  for (int l = 0; l < 2; ++l) {
    printf(kHeaderPrefixFormat, lines[l][0], lines[l][1], lines[l][2], lines[l][3], lines[l][4]);
    for (int p = 0; p < kPlacements; ++p) {
      if (!(p == 0 ? opt_.out_of_place : opt_.in_place)) continue;
      printf(kRunFormat, lines[l][5], lines[l][6], lines[l][7], l == 0 ? "#wrong" : "");
      if (opt_.vs_mpi) printf(kMpiFormat, l == 0 ? "mpi time" : "(us)", l == 0 ? "ratio" : "");
    }
    printf("\n");
  }
}

void Sweep::print_row(const Row &row) const {
  if (rank_ != 0) return;
  progress_clear();
  const Collective c = row.collective;
  const bool barrier = c == Collective::kBarrier;
  char root[16];
  snprintf(root, sizeof root, "%d", rooted(c) ? opt_.root : -1);
  printf(kPrefixFormat, std::to_string(row.shape.bytes).c_str(),
         std::to_string(row.shape.count).c_str(), barrier ? "none" : coll::dtype_name(opt_.dtype),
         reduces(c) ? coll::op_name(opt_.op) : "none", root);
  for (int p = 0; p < kPlacements; ++p) {
    if (!(p == 0 ? opt_.out_of_place : opt_.in_place)) continue;
    const Measurement &m = row.runs[p];
    const double bw = algbw_gbs(row, m.time_us);
    // The barrier has no output to compare.
    const std::string wrong = m.wrong < 0 || barrier ? "N/A" : std::to_string(m.wrong);
    printf(kRunFormat, format_time(m.time_us).c_str(), format_or_dash(moves_data(row), bw).c_str(),
           format_or_dash(moves_data(row), bw * busbw_factor(c, size_)).c_str(), wrong.c_str());
    if (!opt_.vs_mpi) continue;
    if (m.mpi_us < 0) {
      printf(kMpiFormat, "n/a", "n/a");
    } else {
      const bool ratio = has_ratio(row) && m.mpi_us > 0;
      printf(kMpiFormat, format_time(m.mpi_us).c_str(),
             format_or_dash(ratio, ratio ? m.time_us / m.mpi_us : 0).c_str());
    }
  }
  printf("\n");
  fflush(stdout);
}

// The placement the averages are over: out of place unless only in place ran.
int summary_placement(const SweepOptions &opt) { return opt.out_of_place ? 0 : 1; }

// The --check total and, with --vs-mpi, the ratios' geometric mean and worst row.
void Sweep::print_summary(long long wrong) const {
  if (rank_ != 0) return;
  const int p = summary_placement(opt_);
  int ratios = 0;
  double log_ratio_sum = 0, worst_ratio = 0;
  const Row *worst = nullptr;
  for (const Row &row : rows_) {
    const Measurement &m = row.runs[p];
    if (m.mpi_us <= 0 || m.time_us <= 0 || !has_ratio(row)) continue;
    const double ratio = m.time_us / m.mpi_us;
    log_ratio_sum += std::log(ratio);
    ++ratios;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = &row;
    }
  }
  printf("#\n");
  if (opt_.check) {
    printf("# Wrong elements          : %lld %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
  }
  if (ratios > 0) {
    printf(
        "# Cohort/MPI time (ratio) : geometric mean %.2f over %d %s rows with a ratio; worst %.2f "
        "(%s, %zu B)\n",
        std::exp(log_ratio_sum / ratios), ratios, kPlacementNames[p], worst_ratio,
        coll::collective_name(worst->collective), worst->shape.bytes);
  }
}

// One placement of a row, with the fields of the table; null where the table says "-",
// "N/A" or "n/a".
nlohmann::ordered_json Sweep::row_json(const Row &row, int p) const {
  const Collective c = row.collective;
  const Measurement &m = row.runs[p];
  const double bw = algbw_gbs(row, m.time_us);
  const auto or_null = [](bool meaningful, double value) {
    return meaningful ? nlohmann::ordered_json(json_rounded(value, 6)) : nullptr;
  };
  nlohmann::ordered_json j;
  j["collective"] = coll::collective_name(c);
  j["size"] = row.shape.bytes;
  j["count"] = row.shape.count;
  j["type"] = c == Collective::kBarrier ? "none" : coll::dtype_name(opt_.dtype);
  j["redop"] = reduces(c) ? coll::op_name(opt_.op) : "none";
  j["root"] = rooted(c) ? opt_.root : -1;
  j["placement"] = kPlacementNames[p];
  j["time_us"] = json_rounded(m.time_us, 3);
  j["algbw_gbs"] = or_null(moves_data(row), bw);
  j["busbw_gbs"] = or_null(moves_data(row), bw * busbw_factor(c, size_));
  j["wrong"] = m.wrong < 0 || c == Collective::kBarrier ? nullptr : nlohmann::ordered_json(m.wrong);
  if (m.mpi_us >= 0) {
    j["mpi_time_us"] = json_rounded(m.mpi_us, 3);
    j["ratio"] = or_null(has_ratio(row) && m.mpi_us > 0, m.time_us / m.mpi_us);
  } else if (m.mpi_na != nullptr) {
    j["mpi_time_us"] = nullptr;
    j["mpi_na"] = m.mpi_na;
  }
  return j;
}

bool Sweep::write_json() const {
  if (rank_ != 0 || opt_.json.empty()) return true;
  nlohmann::ordered_json doc = json_header("collectives", job_);
  doc["nodes"] = team_.node_count();
  doc["iterations"] = opt_.iterations;
  doc["warmup"] = opt_.warmup;
  doc["check"] = opt_.check;
  doc["vs_mpi"] = opt_.vs_mpi;
  doc["min_bytes"] = opt_.min_bytes;
  doc["max_bytes"] = opt_.max_bytes;
  doc["factor"] = opt_.factor;
  doc["units"] = {{"size", "B"},         {"count", "elements"},
                  {"time_us", "us"},     {"algbw_gbs", "GB/s"},
                  {"busbw_gbs", "GB/s"}, {"wrong", "elements"},
                  {"mpi_time_us", "us"}, {"ratio", "Cohort time / MPI time"}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Row &row : rows_) {
    for (int p = 0; p < kPlacements; ++p) {
      if (row.runs[p].time_us >= 0) rows.push_back(row_json(row, p));
    }
  }
  doc["rows"] = std::move(rows);
  return write_json_file(opt_.json, doc);
}

int Sweep::finish() const {
  long long wrong = 0;
  double busbw_sum = 0;
  int busbw_rows = 0;
  const int p = summary_placement(opt_);
  for (const Row &row : rows_) {
    for (const Measurement &m : row.runs) wrong += std::max(m.wrong, 0ll);
    if (!moves_data(row)) continue;
    busbw_sum += algbw_gbs(row, row.runs[p].time_us) * busbw_factor(row.collective, size_);
    ++busbw_rows;
  }
  print_summary(wrong);
  const bool json_ok = write_json();
  if (rank_ == 0) {
    printf("# Avg bus bandwidth (GB/s): %.3f over %d %s rows (count > 0)\n",
           busbw_rows > 0 ? busbw_sum / busbw_rows : 0.0, busbw_rows,
           kPlacementNames[summary_placement(opt_)]);
    fflush(stdout);
  }
  return wrong > 0 || !json_ok ? 1 : 0;
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

int run_sweep(const SweepOptions &opt, const Job &job) {
  cohort_team_config_t config;
  cohort_team_config_init(&config);
  config.cuda_device = COHORT_DEVICE_NONE;  // host buffers
  config.name = "cohort_perf";
  cohort::Team team;
  try {
    team = cohort::Team(MPI_COMM_WORLD, &config);
  } catch (const cohort::Error &e) {
    // Every rank gets the same outcome; one message is enough.
    if (job.rank == 0) fprintf(stderr, "cohort_perf: team create: %s\n", e.what());
    return 1;
  }
  Sweep sweep(opt, std::move(team), job);
  progress_start(job.rank == 0);
  if (!sweep.allocate_buffers()) return 1;
  sweep.print_header();
  const std::vector<size_t> sizes = sweep_sizes(opt);
  int total = 0, done = 0;
  for (Collective c : opt.collectives) {
    total += c == Collective::kBarrier ? 1 : static_cast<int>(sizes.size());
  }
  for (Collective c : opt.collectives) sweep.run_collective(c, sizes, &done, total);
  return sweep.finish();
}

}  // namespace cohort::perf
