#include "perf_table.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "coll/dtype.h"
#include "perf_json.h"

namespace cohort::perf {

const char *const kPlacementNames[kPlacements] = {"out-of-place", "in-place"};

namespace {

// Cohort time / a reference time, which says nothing when neither moves data (count 0): the
// barrier's, which synchronizes, is kept.
bool has_ratio(const Row &row) { return moves_data(row) || row.collective == Collective::kBarrier; }

// "%.2f" (or another format) of a value, or "-" where it means nothing.
std::string format_or_dash(bool meaningful, double value, const char *format = "%.2f") {
  if (!meaningful) return "-";
  char text[32];
  snprintf(text, sizeof text, format, value);
  return text;
}

// Column widths: the common prefix, then per placement time, algbw, busbw, #wrong, and with
// the options the graph time, the roofline fraction, NCCL's time and ratio, MPI's.
constexpr const char *kPrefixFormat = "%12s  %12s  %8s  %6s  %6s";
constexpr const char *kHeaderPrefixFormat = "#%11s  %12s  %8s  %6s  %6s";  // same widths
constexpr int kPrefixWidth = 52, kRunWidth = 37, kGraphWidth = 11, kRoofWidth = 8, kRatioWidth = 19;
constexpr const char *kRunFormat = "  %9s  %7s  %7s  %6s";
constexpr const char *kGraphFormat = "  %9s";
constexpr const char *kRoofFormat = "  %6s";
constexpr const char *kRatioFormat = "  %9s  %6s";  // a reference's time and the ratio

// "time  ratio" of a reference measurement: "n/a" when it could not run.
void print_reference(const Row &row, double time_us, double reference_us) {
  if (reference_us < 0) {
    printf(kRatioFormat, "n/a", "n/a");
    return;
  }
  const bool ratio = has_ratio(row) && reference_us > 0;
  printf(kRatioFormat, format_time(reference_us).c_str(),
         format_or_dash(ratio, ratio ? time_us / reference_us : 0).c_str());
}

// The n-th row (from 0) of collective c, or nullptr.
const Row *nth_row_of(const std::vector<Row> &rows, Collective c, size_t n) {
  for (const Row &row : rows) {
    if (row.collective == c && n-- == 0) return &row;
  }
  return nullptr;
}

}  // namespace

double Roofline::floor_us(const Row &row) const {
  if (copy_gbs <= 0 || row.collective != Collective::kAllreduce || !moves_data(row)) return -1;
  return 2.0 * ranks_per_gpu * static_cast<double>(row.shape.bytes) / (copy_gbs * 1e3);
}

double algbw_gbs(const Row &row, double us) { return us > 0 ? row.shape.bytes / (us * 1e3) : 0; }

bool moves_data(const Row &row) { return row.shape.bytes > 0; }

std::string format_time(double us) {
  char text[32];
  snprintf(text, sizeof text, us < 1e4 ? "%.2f" : us < 1e6 ? "%.1f" : "%.0f", us);
  return text;
}

Table::Table(const SweepOptions &opt, int ranks, const Roofline &roofline, bool nccl)
    : opt_(opt), ranks_(ranks), roofline_(roofline), nccl_(nccl) {}

void Table::print_header(Collective c) const {
  if (c == Collective::kBarrier) {
    printf("#\n# barrier: moves no data, runs once\n");
  } else {
    printf("#\n# %s: busbw = algbw x %.3g\n", coll::collective_name(c), busbw_factor(c, ranks_));
  }
  const bool graph = opt_.graph_ops > 0, roof = opt_.roofline;
  const bool nccl_graph = nccl_ && graph;
  const int group_width = kRunWidth + (graph ? kGraphWidth : 0) + (roof ? kRoofWidth : 0) +
                          (nccl_ ? kRatioWidth : 0) + (nccl_graph ? kRatioWidth : 0) +
                          (opt_.vs_mpi ? kRatioWidth : 0);
  std::string titles = "#" + std::string(kPrefixWidth - 1, ' ');
  for (int p = 0; p < kPlacements; ++p) {
    if (!placed(p)) continue;
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
      if (!placed(p)) continue;
      printf(kRunFormat, lines[l][5], lines[l][6], lines[l][7], l == 0 ? "#wrong" : "");
      if (graph) printf(kGraphFormat, l == 0 ? "graph" : "(us)");
      if (roof) printf(kRoofFormat, l == 0 ? "roof" : "(%)");
      if (nccl_) printf(kRatioFormat, l == 0 ? "nccl time" : "(us)", l == 0 ? "ratio" : "");
      if (nccl_graph) {
        printf(kRatioFormat, l == 0 ? "nccl graph" : "(us)", l == 0 ? "ratio" : "");
      }
      if (opt_.vs_mpi) printf(kRatioFormat, l == 0 ? "mpi time" : "(us)", l == 0 ? "ratio" : "");
    }
    printf("\n");
  }
}

void Table::print_run(const Row &row, const Measurement &m) const {
  const Collective c = row.collective;
  const double bw = algbw_gbs(row, m.time_us);
  // The barrier has no output to compare.
  const bool barrier = c == Collective::kBarrier;
  const std::string wrong = m.wrong < 0 || barrier ? "N/A" : std::to_string(m.wrong);
  printf(kRunFormat, format_time(m.time_us).c_str(), format_or_dash(moves_data(row), bw).c_str(),
         format_or_dash(moves_data(row), bw * busbw_factor(c, ranks_)).c_str(), wrong.c_str());
  if (opt_.graph_ops > 0) {
    printf(kGraphFormat, m.graph_us < 0 ? "-" : format_time(m.graph_us).c_str());
  }
  if (opt_.roofline) {
    const double floor = roofline_.floor_us(row);
    printf(kRoofFormat,
           format_or_dash(floor > 0 && m.time_us > 0, 100 * floor / m.time_us, "%.1f").c_str());
  }
  if (nccl_) print_reference(row, m.time_us, m.nccl_us);
  if (nccl_ && opt_.graph_ops > 0) {
    if (m.graph_us < 0 && m.nccl_graph_us < 0) {
      printf(kRatioFormat, "-", "-");  // no graph of either (nothing to enqueue)
    } else {
      print_reference(row, m.graph_us, m.nccl_graph_us);
    }
  }
  if (opt_.vs_mpi) print_reference(row, m.time_us, m.mpi_us);
}

void Table::print_row(const Row &row) const {
  const Collective c = row.collective;
  char root[16];
  snprintf(root, sizeof root, "%d", rooted(c) ? opt_.root : -1);
  printf(kPrefixFormat, std::to_string(row.shape.bytes).c_str(),
         std::to_string(row.shape.count).c_str(),
         c == Collective::kBarrier ? "none" : coll::dtype_name(opt_.dtype),
         reduces(c) ? coll::op_name(opt_.op) : "none", root);
  for (int p = 0; p < kPlacements; ++p) {
    if (placed(p)) print_run(row, row.runs[p]);
  }
  printf("\n");
  fflush(stdout);
}

// "Cohort/LABEL time         : geometric mean G over N rows with a ratio; worst W (...)".
void Table::print_ratio_summary(const std::vector<Row> &rows, const char *label,
                                double Measurement::*mine, double Measurement::*reference) const {
  const int p = summary_placement();
  int ratios = 0;
  double log_ratio_sum = 0, worst_ratio = 0;
  const Row *worst = nullptr;
  for (const Row &row : rows) {
    const Measurement &m = row.runs[p];
    if (m.*reference <= 0 || m.*mine <= 0 || !has_ratio(row)) continue;
    const double ratio = m.*mine / m.*reference;
    log_ratio_sum += std::log(ratio);
    ++ratios;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = &row;
    }
  }
  if (ratios == 0) return;
  char title[48];
  snprintf(title, sizeof title, "Cohort/%s time", label);
  printf("# %-24s: geometric mean %.2f over %d %s rows with a ratio; worst %.2f (%s, %zu B)\n",
         title, std::exp(log_ratio_sum / ratios), ratios, kPlacementNames[p], worst_ratio,
         coll::collective_name(worst->collective), worst->shape.bytes);
}

void Table::print_summary(const std::vector<Row> &rows, long long wrong) const {
  printf("#\n");
  if (opt_.check) {
    printf("# Wrong elements          : %lld %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
  }
  print_ratio_summary(rows, "MPI", &Measurement::time_us, &Measurement::mpi_us);
  print_ratio_summary(rows, "NCCL", &Measurement::time_us, &Measurement::nccl_us);
  print_ratio_summary(rows, "NCCL graph", &Measurement::graph_us, &Measurement::nccl_graph_us);
  const int p = summary_placement();
  const Row *best = nullptr;
  double best_fraction = 0;
  for (const Row &row : rows) {
    const double floor = roofline_.floor_us(row), time = row.runs[p].time_us;
    if (floor <= 0 || time <= 0 || floor / time <= best_fraction) continue;
    best_fraction = floor / time;
    best = &row;
  }
  if (best != nullptr) {
    printf("# Roofline (allreduce)    : at best %.1f %% of the floor's speed (%s, %zu B)\n",
           100 * best_fraction, kPlacementNames[p], best->shape.bytes);
  }
  if (nccl_) print_nccl_ratio_table(rows);
}

// Rows are collective by collective, each over the same requested sizes (sweep_sizes), so a
// row's index within its collective names its requested size.
void Table::print_nccl_ratio_table(const std::vector<Row> &rows) const {
  const int p = summary_placement();
  const bool graph = opt_.graph_ops > 0;
  const std::vector<size_t> sizes = sweep_sizes(opt_);
  std::vector<Collective> columns;
  for (const Row &row : rows) {
    if (row.runs[p].nccl_us < 0) continue;
    if (columns.empty() || columns.back() != row.collective) columns.push_back(row.collective);
  }
  if (columns.empty()) return;
  printf(
      "#\n# Cohort/NCCL time, %s, per requested size (below 1: Cohort faster; busbw ratio = "
      "1 / time ratio)%s\n",
      kPlacementNames[p], graph ? "; graph: both replayed from CUDA graphs" : "");
  printf("#%11s", "size");
  // Without --graph a column is as wide as the longest name ("reduce_scatter").
  for (Collective c : columns) printf(graph ? "  %15s" : "  %14s", coll::collective_name(c));
  printf("\n#%11s", "(B)");
  for (size_t i = 0; i < columns.size(); ++i) {
    printf(graph ? "  %7s %7s" : "  %14s", "eager", "graph");
  }
  printf("\n");
  for (size_t i = 0; i < sizes.size(); ++i) {
    printf("#%11zu", sizes[i]);  // a comment: the rows above are the data
    for (Collective c : columns) {
      const Row *row = nth_row_of(rows, c, i);
      const Measurement *m = row != nullptr ? &row->runs[p] : nullptr;
      const bool eager = m && has_ratio(*row) && m->nccl_us > 0 && m->time_us > 0;
      const bool replayed = m && has_ratio(*row) && m->nccl_graph_us > 0 && m->graph_us > 0;
      printf(graph ? "  %7s" : "  %14s",
             format_or_dash(eager, eager ? m->time_us / m->nccl_us : 0).c_str());
      if (graph) {
        printf(" %7s",
               format_or_dash(replayed, replayed ? m->graph_us / m->nccl_graph_us : 0).c_str());
      }
    }
    printf("\n");
  }
}

nlohmann::ordered_json Table::row_json(const Row &row, int p) const {
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
  j["busbw_gbs"] = or_null(moves_data(row), bw * busbw_factor(c, ranks_));
  j["wrong"] = m.wrong < 0 || c == Collective::kBarrier ? nullptr : nlohmann::ordered_json(m.wrong);
  if (opt_.graph_ops > 0) j["graph_time_us"] = or_null(m.graph_us >= 0, m.graph_us);
  if (opt_.roofline) {
    const double floor = roofline_.floor_us(row);
    j["roofline_fraction"] = or_null(floor > 0 && m.time_us > 0, floor / m.time_us);
  }
  if (nccl_) {
    j["nccl_time_us"] = or_null(m.nccl_us >= 0, m.nccl_us);
    j["nccl_ratio"] = or_null(has_ratio(row) && m.nccl_us > 0, m.time_us / m.nccl_us);
    if (opt_.graph_ops > 0) {
      j["nccl_graph_time_us"] = or_null(m.nccl_graph_us >= 0, m.nccl_graph_us);
      j["nccl_graph_ratio"] = or_null(has_ratio(row) && m.nccl_graph_us > 0 && m.graph_us > 0,
                                      m.graph_us / m.nccl_graph_us);
    }
  }
  if (m.mpi_us >= 0) {
    j["mpi_time_us"] = json_rounded(m.mpi_us, 3);
    j["ratio"] = or_null(has_ratio(row) && m.mpi_us > 0, m.time_us / m.mpi_us);
  } else if (m.mpi_na != nullptr) {
    j["mpi_time_us"] = nullptr;
    j["mpi_na"] = m.mpi_na;
  }
  return j;
}

nlohmann::ordered_json Table::units_json() const {
  nlohmann::ordered_json units = {{"size", "B"},         {"count", "elements"},
                                  {"time_us", "us"},     {"algbw_gbs", "GB/s"},
                                  {"busbw_gbs", "GB/s"}, {"wrong", "elements"},
                                  {"mpi_time_us", "us"}, {"ratio", "Cohort time / MPI time"}};
  if (opt_.graph_ops > 0) units["graph_time_us"] = "us per call, replayed from a CUDA graph";
  if (opt_.roofline) units["roofline_fraction"] = "roofline floor time / time (1: at the floor)";
  if (nccl_) {
    units["nccl_time_us"] = "us";
    units["nccl_ratio"] = "Cohort time / NCCL time";
    if (opt_.graph_ops > 0) {
      units["nccl_graph_time_us"] = "us per call, NCCL's, replayed from a CUDA graph";
      units["nccl_graph_ratio"] = "Cohort graph time / NCCL graph time";
    }
  }
  return units;
}

}  // namespace cohort::perf
