// cohort_perf: Cohort's benchmark, in two modes.
// --team-create (the default): team creation and destruction, timed (perf_team.h).
// -c LIST: the collective sweep, nccl-tests' tables for Cohort's host collectives, optionally
// validated and timed against MPI (perf_sweep.h).
#include <getopt.h>
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cohort.h"
#include "perf_coll.h"
#include "perf_job.h"
#include "perf_sweep.h"
#include "perf_team.h"
#include "tool_version.h"
#include "coll/dtype.h"

namespace {

struct Options {
  bool team_create = false;
  bool sweep_only_option = false;  // an option that only the sweep (-c) takes
  int iterations = -1;             // -1: the mode's default
  int warmup = -1;
  bool host_only = false;
  std::string json;
  bool in_place = false, out_of_place = false;
  cohort::perf::SweepOptions sweep;  // used when -c is given
};

void usage(FILE *out) {
  fprintf(
      out,
      "usage: mpirun -np N cohort_perf [--team-create] [-n ITERS] [-w WARMUP] [--host-only]\n"
      "                                [--json FILE]\n"
      "       mpirun -np N cohort_perf -c LIST [-b MIN] [-e MAX] [-f FACTOR] [-d DTYPE] [-o OP]\n"
      "                                [-r ROOT] [-n ITERS] [-w WARMUP] [--in-place]\n"
      "                                [--out-of-place] [--check] [--vs-mpi] [--json FILE]\n"
      "       cohort_perf --version      version, git revision, build, NVIDIA driver (no mpirun)\n"
      "Team creation:\n"
      "  --team-create  time team creation + destruction on MPI_COMM_WORLD (the default)\n"
      "  -n ITERS       timed iterations (default 20)\n"
      "  -w WARMUP      untimed iterations first (default 2)\n"
      "  --host-only    create host-only teams (bind no GPU)\n"
      "  --json FILE    also write the results as JSON (rank 0)\n"
      "Collective sweep, on host memory, one host-only team (columns as nccl-tests):\n"
      "  -c LIST        collectives, comma-separated: allreduce, reduce, broadcast, allgather,\n"
      "                 reduce_scatter, alltoall, barrier, or all\n"
      "  -b MIN, -e MAX sizes in bytes, suffix K, M or G (x1024; default 8 to 64M).  As in\n"
      "                 nccl-tests, allreduce, reduce and broadcast move SIZE bytes per rank\n"
      "                 (count = SIZE / element size); for allgather, reduce_scatter and\n"
      "                 alltoall SIZE is the larger buffer (allgather's output,\n"
      "                 reduce_scatter's input) and count is one rank's block, SIZE / element\n"
      "                 size / ranks rounded down to 16 bytes; the barrier runs once\n"
      "  -f FACTOR      size multiplier from MIN up to MAX (default 2)\n"
      "  -d DTYPE       int8, uint8, int32, uint32, int64, uint64, fp16, bf16, fp32, fp64\n"
      "                 (aliases half, bfloat16, float, double, int; default fp32)\n"
      "  -o OP          sum, prod, min, max, avg (default sum)\n"
      "  -r ROOT        root of reduce and broadcast (default 0)\n"
      "  -n ITERS       timed iterations per size (default 20)\n"
      "  -w WARMUP      untimed iterations before them (default 5)\n"
      "  --out-of-place, --in-place  only these runs (default both: out of place, then in place)\n"
      "  --check        rerun each size ITERS times untimed on inputs whose results are exact,\n"
      "                 compare every result bit for bit; #wrong counts the wrong elements\n"
      "                 over ranks and runs, and any makes the exit status 1\n"
      "  --vs-mpi       time the matching MPI call on the same buffers (MPI_Allreduce,\n"
      "                 MPI_Reduce, MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block,\n"
      "                 MPI_Alltoall, MPI_Barrier; MPI_IN_PLACE in place) and the ratio\n"
      "                 Cohort time / MPI time; n/a for fp16/bf16 reductions and avg\n"
      "  --json FILE    also write every row as JSON (rank 0)\n"
      "Time is the average per iteration of the slowest rank.  When its stderr is a terminal,\n"
      "rank 0 shows progress there, on one line it erases before writing results.  Rank 0\n"
      "warns when the ranks of a host outnumber its cores.\n");
}

// Strict integer parsing: the whole text, within [min, INT_MAX].
bool parse_int(const char *text, int min, int *out) {
  char *end = nullptr;
  errno = 0;
  const long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > INT_MAX) return false;
  *out = static_cast<int>(value);
  return true;
}

// Bytes with an optional K, M or G (powers of 1024), as nccl-tests takes them.
bool parse_bytes(const char *text, size_t *out) {
  char *end = nullptr;
  errno = 0;
  const unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  int shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: return false;
  }
  if (shift > 0 && end[1] != '\0') return false;
  if (value > (SIZE_MAX >> shift)) return false;
  *out = static_cast<size_t>(value) << shift;
  return true;
}

bool parse_collectives(std::string_view list, std::vector<cohort::coll::Collective> *out) {
  using cohort::coll::Collective;
  out->clear();
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    std::vector<Collective> add;
    Collective c;
    if (name == "all") {
      for (int k = 0; k < static_cast<int>(Collective::kCount); ++k) {
        add.push_back(static_cast<Collective>(k));
      }
    } else if (cohort::perf::parse_collective(name, &c)) {
      add.push_back(c);
    } else {
      return false;
    }
    for (Collective a : add) {
      if (std::find(out->begin(), out->end(), a) == out->end()) out->push_back(a);
    }
  }
  return !out->empty();
}

// Parses one option of the sweep; false with *error set when its value is bad.
bool parse_sweep_option(int c, const char *arg, Options *opt, std::string *error) {
  cohort::perf::SweepOptions &s = opt->sweep;
  opt->sweep_only_option = opt->sweep_only_option || c != 'c';
  switch (c) {
    case 'c':
      if (parse_collectives(arg, &s.collectives)) return true;
      *error = std::string("-c ") + arg +
               ": unknown collective; use allreduce, reduce, broadcast, allgather, "
               "reduce_scatter, alltoall, barrier or all, separated by commas";
      return false;
    case 'b':
    case 'e':
      if (parse_bytes(arg, c == 'b' ? &s.min_bytes : &s.max_bytes)) return true;
      *error = std::string("-") + static_cast<char>(c) + " " + arg +
               ": not a size in bytes (digits, optionally K, M or G)";
      return false;
    case 'f': {
      int factor = 0;
      if (parse_int(arg, 2, &factor)) {
        s.factor = static_cast<size_t>(factor);
        return true;
      }
      *error = std::string("-f ") + arg + ": the factor must be an integer >= 2";
      return false;
    }
    case 'd': {
      auto dtype = cohort::coll::parse_dtype(arg);
      if (dtype) {
        s.dtype = *dtype;
        return true;
      }
      *error = std::string("-d ") + arg +
               ": unknown dtype; use int8, uint8, int32, uint32, int64, uint64, fp16, bf16, "
               "fp32 or fp64 (or half, bfloat16, float, double, int)";
      return false;
    }
    case 'o': {
      auto op = cohort::coll::parse_op(arg);
      if (op) {
        s.op = *op;
        return true;
      }
      *error = std::string("-o ") + arg + ": unknown op; use sum, prod, min, max or avg";
      return false;
    }
    case 'r':
      if (parse_int(arg, 0, &s.root)) return true;
      *error = std::string("-r ") + arg + ": the root must be a rank (an integer >= 0)";
      return false;
    case 'I': opt->in_place = true; return true;
    case 'O': opt->out_of_place = true; return true;
    case 'C': s.check = true; return true;
    case 'M': s.vs_mpi = true; return true;
    default: return false;
  }
}

// Checks the combination of options and fills in the mode's defaults.
bool finish_options(Options *opt, std::string *error) {
  const bool sweep = !opt->sweep.collectives.empty();
  if (sweep && opt->team_create) {
    *error = "--team-create and -c are separate runs: give one of them";
    return false;
  }
  if (!sweep && opt->sweep_only_option) {
    *error =
        "-b, -e, -f, -d, -o, -r, --in-place, --out-of-place, --check and --vs-mpi "
        "belong to the collective sweep: add -c LIST";
    return false;
  }
  cohort::perf::SweepOptions &s = opt->sweep;
  if (sweep && s.min_bytes > s.max_bytes) {
    *error = "-b " + std::to_string(s.min_bytes) + " is above -e " + std::to_string(s.max_bytes);
    return false;
  }
  if (sweep && s.min_bytes == 0) {
    *error = "-b must be at least 1 byte (a size smaller than one element runs count 0)";
    return false;
  }
  if (opt->in_place || opt->out_of_place) {
    s.in_place = opt->in_place;
    s.out_of_place = opt->out_of_place;
  }
  opt->team_create = !sweep;
  s.iterations = opt->iterations >= 0 ? opt->iterations : s.iterations;
  s.warmup = opt->warmup >= 0 ? opt->warmup : s.warmup;
  s.json = opt->json;
  if (opt->iterations < 0) opt->iterations = 20;
  if (opt->warmup < 0) opt->warmup = 2;
  return true;
}

bool parse(int argc, char **argv, Options *opt, std::string *error) {
  static const option options[] = {{"team-create", no_argument, nullptr, 't'},
                                   {"json", required_argument, nullptr, 'j'},
                                   {"host-only", no_argument, nullptr, 'H'},
                                   {"in-place", no_argument, nullptr, 'I'},
                                   {"out-of-place", no_argument, nullptr, 'O'},
                                   {"check", no_argument, nullptr, 'C'},
                                   {"vs-mpi", no_argument, nullptr, 'M'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
  opterr = 0;  // every rank parses: report once, from rank 0
  int c;
  while ((c = getopt_long(argc, argv, ":n:w:c:b:e:f:d:o:r:th", options, nullptr)) != -1) {
    switch (c) {
      case 't': opt->team_create = true; break;
      case 'n':
      case 'w':
        if (!parse_int(optarg, c == 'n' ? 1 : 0, c == 'n' ? &opt->iterations : &opt->warmup)) {
          *error = std::string("-") + static_cast<char>(c) + " " + optarg +
                   (c == 'n' ? ": need an integer >= 1" : ": need an integer >= 0");
          return false;
        }
        break;
      case 'j': opt->json = optarg; break;
      case 'H': opt->host_only = true; break;
      case 'h': usage(stdout); exit(0);
      case ':': *error = std::string(argv[optind - 1]) + " needs a value"; return false;
      case '?':
        *error = optopt != 0 ? std::string("unknown option -") + static_cast<char>(optopt)
                             : std::string("unknown option ") + argv[optind - 1];
        return false;
      default:
        if (!parse_sweep_option(c, optarg, opt, error)) return false;
    }
  }
  if (optind < argc) {
    *error = std::string("unexpected argument ") + argv[optind];
    return false;
  }
  return finish_options(opt, error);
}

cohort::perf::TeamCreateOptions team_create_options(const Options &opt) {
  cohort::perf::TeamCreateOptions t;
  t.iterations = opt.iterations;
  t.warmup = opt.warmup;
  t.host_only = opt.host_only;
  t.json = opt.json;
  return t;
}

}  // namespace

int main(int argc, char **argv) {
  if (cohort::tools::asks_version(argc, argv)) {  // before MPI_Init: needs no MPI job
    cohort::tools::print_version("cohort_perf");
    return 0;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options opt;
  std::string error;
  bool ok = parse(argc, argv, &opt, &error);
  if (ok && !opt.team_create && opt.sweep.root >= size) {
    error = "-r " + std::to_string(opt.sweep.root) + ": the root must be below the rank count (" +
            std::to_string(size) + ")";
    ok = false;
  }
  if (!ok) {
    if (rank == 0) fprintf(stderr, "cohort_perf: %s (--help for usage)\n", error.c_str());
    MPI_Finalize();
    return 1;
  }
  const cohort::perf::Job job = cohort::perf::job_of(MPI_COMM_WORLD);
  const std::string warning = cohort::perf::oversubscription_warning(job.load);
  if (rank == 0 && !warning.empty()) fprintf(stderr, "cohort_perf: warning: %s\n", warning.c_str());
  int rc = opt.team_create ? cohort::perf::run_team_create(team_create_options(opt), job)
                           : cohort::perf::run_sweep(opt.sweep, job);
  MPI_Finalize();
  return rc;
}
