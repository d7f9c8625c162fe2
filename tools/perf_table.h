// cohort_perf's sweep table: the rows measured, printed as nccl-tests prints them (size,
// count, type, redop, root, then per placement time, algbw, busbw, #wrong and the columns the
// options add), the summary under the tables, and each row as JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "perf_coll.h"
#include "perf_sweep.h"

namespace cohort::perf {

constexpr int kPlacements = 2;  // 0: out of place, 1: in place
extern const char *const kPlacementNames[kPlacements];

// One placement's results; negative / nullptr fields were not measured.
struct Measurement {
  double time_us = -1;
  long long wrong = -1;
  double graph_us = -1;  // --graph: per call, replayed from a CUDA graph
  double mpi_us = -1;
  const char *mpi_na = nullptr;  // why MPI could not make the call
  double nccl_us = -1;
  double nccl_graph_us = -1;  // --vs-nccl --graph: NCCL's, replayed from a CUDA graph
};

struct Row {
  Collective collective = Collective::kAllreduce;
  Shape shape;
  Measurement runs[kPlacements];
};

// What a sweep measured, for --calibrate (run_sweep's `result`).
struct SweepResult {
  std::vector<Row> rows;
  int nodes = 1;  // the team's hosts (COHORT_HOST_ID's fake hosts count as hosts)
};

// --roofline: an allreduce of S bytes per rank on a GPU that n ranks share cannot take less
// than 2 n S / copy bandwidth (every input read once, every output written once, at the
// speed of the GPU's own device-to-device copy); with one rank per GPU, 2 S / copy bandwidth.
struct Roofline {
  double copy_gbs = 0;  // 0: not measured
  int ranks_per_gpu = 1;
  // The floor of a row in us; -1 where there is none (no --roofline, not an allreduce, no data).
  double floor_us(const Row &row) const;
};

double algbw_gbs(const Row &row, double us);
// A row that moves no data (count 0, or the barrier) has no bandwidth.
bool moves_data(const Row &row);
std::string format_time(double us);

class Table {
 public:
  // `nccl`: NCCL runs (the --vs-nccl columns show); `ranks`: the team's size.
  Table(const SweepOptions &opt, int ranks, const Roofline &roofline, bool nccl);

  bool placed(int p) const { return p == 0 ? opt_.out_of_place : opt_.in_place; }
  // The placement the averages are over: out of place unless only in place ran.
  int summary_placement() const { return opt_.out_of_place ? 0 : 1; }

  void print_header(Collective c) const;  // the collective's title and the column heads
  void print_row(const Row &row) const;
  // The --check total, the ratios' geometric means, the best roofline fraction, and with
  // --vs-nccl a table of Cohort/NCCL time ratios (size by collective, eager and graph).
  void print_summary(const std::vector<Row> &rows, long long wrong) const;
  // One placement of a row, with the fields of the table; null where the table says "-",
  // "N/A" or "n/a".
  nlohmann::ordered_json row_json(const Row &row, int placement) const;
  // The units of row_json's fields.
  nlohmann::ordered_json units_json() const;

 private:
  void print_ratio_summary(const std::vector<Row> &rows, const char *label,
                           double Measurement::*mine, double Measurement::*reference) const;
  void print_nccl_ratio_table(const std::vector<Row> &rows) const;
  void print_run(const Row &row, const Measurement &m) const;

  SweepOptions opt_;
  int ranks_;
  Roofline roofline_;
  bool nccl_;
};

}  // namespace cohort::perf
