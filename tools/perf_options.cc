#include "perf_options.h"

#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "perf_coll.h"
#include "coll/dtype.h"

namespace cohort::perf {
namespace {

// The command line as given, before finish() checks it and fills in the defaults.
struct Given {
  bool team_create = false;
  bool sweep_only_option = false;  // an option that only the sweep (-c) takes
  int iterations = -1;             // -1: the mode's default
  int warmup = -1;
  bool host_only = false;
  bool memory_given = false;  // -m
  bool vs_nccl = false;
  std::string json;
  bool in_place = false, out_of_place = false;
  SweepOptions sweep;  // used when -c is given
};

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

bool parse_collectives(std::string_view list, std::vector<Collective> *out) {
  out->clear();
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    std::vector<Collective> add;
    Collective c;
    if (name == "all") {
      for (int k = 0; k < static_cast<int>(Collective::kCount); ++k) {
        if (measured(static_cast<Collective>(k))) add.push_back(static_cast<Collective>(k));
      }
    } else if (parse_collective(name, &c)) {
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
bool parse_sweep_option(int c, const char *arg, Given *opt, std::string *error) {
  SweepOptions &s = opt->sweep;
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
    case 'G':
      if (parse_int(arg, 1, &s.graph_ops)) return true;
      *error = std::string("--graph ") + arg + ": the calls per graph must be an integer >= 1";
      return false;
    case 'R': s.roofline = true; return true;
    case 'U': s.register_buffers = false; return true;
    case 'B': s.blocking = true; return true;
    case 'K':
      s.calibrate = arg;
      if (!s.calibrate.empty()) return true;
      *error = "--calibrate needs a file name";
      return false;
    default: return false;
  }
}

bool parse_memory(const char *arg, Given *opt, std::string *error) {
  opt->memory_given = true;
  if (std::string_view(arg) == "host" || std::string_view(arg) == "cuda") {
    opt->sweep.memory = std::string_view(arg) == "cuda" ? MemoryKind::kCuda : MemoryKind::kHost;
    return true;
  }
  *error = std::string("-m ") + arg + ": unknown memory; use host or cuda";
  return false;
}

// The combinations of memory with the other options.
bool check_memory(Given *opt, std::string *error) {
  SweepOptions &s = opt->sweep;
  const bool cuda = s.memory == MemoryKind::kCuda;
  if (opt->vs_nccl && opt->memory_given && !cuda) {
    *error = "--vs-nccl compares on the GPU: it needs -m cuda, not -m host";
    return false;
  }
  if (opt->vs_nccl) s.memory = MemoryKind::kCuda;
  if (s.memory == MemoryKind::kCuda && opt->host_only) {
    *error = "--host-only binds no GPU; -m cuda (or --vs-nccl) binds one: give one of them";
    return false;
  }
  if (s.memory == MemoryKind::kCuda && s.vs_mpi) {
    *error =
        "--vs-mpi on GPU device memory (-m cuda) is not measured: MPI would get device "
        "pointers, which only a CUDA-aware MPI takes; compare with --vs-nccl there, or run "
        "--vs-mpi on host memory";
    return false;
  }
  if (s.memory != MemoryKind::kCuda &&
      (s.graph_ops > 0 || s.roofline || !s.register_buffers || s.blocking)) {
    *error = "--graph, --roofline, --no-register and --blocking run on the GPU: add -m cuda";
    return false;
  }
  return true;
}

// --calibrate: a sweep (-c all unless -c is given) timed out of place, compared with nothing.
bool check_calibrate(Given *given, std::string *error) {
  SweepOptions &s = given->sweep;
  if (s.vs_mpi || given->vs_nccl || given->in_place || given->team_create || !given->json.empty()) {
    *error =
        "--calibrate times Cohort's algorithms out of place against each other and writes "
        "its own file: leave out --vs-mpi, --vs-nccl, --in-place, --team-create and --json";
    return false;
  }
  if (s.collectives.empty()) parse_collectives("all", &s.collectives);
  given->out_of_place = true;
  return true;
}

// Checks the combination of options and fills in the mode's defaults.
bool finish(Given *given, Options *opt, std::string *error) {
  SweepOptions &s = given->sweep;
  if (!s.calibrate.empty() && !check_calibrate(given, error)) return false;
  const bool sweep = !s.collectives.empty();
  if (sweep && given->team_create) {
    *error = "--team-create and -c are separate runs: give one of them";
    return false;
  }
  if (!sweep && given->sweep_only_option) {
    *error =
        "-b, -e, -f, -d, -o, -r, --in-place, --out-of-place, --check, --vs-mpi, --graph, "
        "--roofline and --no-register belong to the collective sweep: add -c LIST";
    return false;
  }
  if (sweep && s.min_bytes > s.max_bytes) {
    *error = "-b " + std::to_string(s.min_bytes) + " is above -e " + std::to_string(s.max_bytes);
    return false;
  }
  if (sweep && s.min_bytes == 0) {
    *error = "-b must be at least 1 byte (a size smaller than one element runs count 0)";
    return false;
  }
  if (!check_memory(given, error)) return false;
  if (given->in_place || given->out_of_place) {
    s.in_place = given->in_place;
    s.out_of_place = given->out_of_place;
  }
  s.iterations = given->iterations >= 0 ? given->iterations : s.iterations;
  s.warmup = given->warmup >= 0 ? given->warmup : s.warmup;
  s.json = given->json;
  s.vs_nccl = given->vs_nccl;
  opt->team_create = !sweep;
  opt->sweep = s;
  TeamCreateOptions &t = opt->team;
  t.iterations = given->iterations >= 0 ? given->iterations : 20;
  t.warmup = given->warmup >= 0 ? given->warmup : 2;
  t.host_only = given->host_only;
  t.cuda = s.memory == MemoryKind::kCuda;
  t.vs_nccl = given->vs_nccl;
  t.json = given->json;
  return true;
}

// One option of either mode; false with *error set when it is wrong.
bool parse_option(int c, char **argv, Given *opt, std::string *error) {
  switch (c) {
    case 't': opt->team_create = true; return true;
    case 'n':
    case 'w':
      if (parse_int(optarg, c == 'n' ? 1 : 0, c == 'n' ? &opt->iterations : &opt->warmup)) {
        return true;
      }
      *error = std::string("-") + static_cast<char>(c) + " " + optarg +
               (c == 'n' ? ": need an integer >= 1" : ": need an integer >= 0");
      return false;
    case 'j': opt->json = optarg; return true;
    case 'H': opt->host_only = true; return true;
    case 'm': return parse_memory(optarg, opt, error);
    case 'N': opt->vs_nccl = true; return true;
    case 'h': usage(stdout); exit(0);
    case ':': *error = std::string(argv[optind - 1]) + " needs a value"; return false;
    case '?':
      *error = optopt != 0 ? std::string("unknown option -") + static_cast<char>(optopt)
                           : std::string("unknown option ") + argv[optind - 1];
      return false;
    default: return parse_sweep_option(c, optarg, opt, error);
  }
}

}  // namespace

void usage(FILE *out) {
  fprintf(
      out,
      "usage: mpirun -np N cohort_perf [--team-create] [-n ITERS] [-w WARMUP] [--host-only]\n"
      "                                [-m MEMORY] [--vs-nccl] [--json FILE]\n"
      "       mpirun -np N cohort_perf -c LIST [-b MIN] [-e MAX] [-f FACTOR] [-d DTYPE] [-o OP]\n"
      "                                [-r ROOT] [-n ITERS] [-w WARMUP] [--in-place]\n"
      "                                [--out-of-place] [--check] [--vs-mpi] [-m MEMORY]\n"
      "                                [--graph N] [--roofline] [--no-register] [--vs-nccl]\n"
      "                                [--json FILE] [--calibrate FILE]\n"
      "       cohort_perf --version      version, git revision, build, NVIDIA driver (no mpirun)\n"
      "Team creation:\n"
      "  --team-create  time team creation + destruction on MPI_COMM_WORLD (the default)\n"
      "  -n ITERS       timed iterations (default 20)\n"
      "  -w WARMUP      untimed iterations first (default 2)\n"
      "  --host-only    create host-only teams (bind no GPU)\n"
      "  -m cuda        first bind each rank's GPU (local rank %% GPUs) and create its context\n"
      "  --vs-nccl      (implies -m cuda) also time ncclGetUniqueId + ncclCommInitRank, the\n"
      "                 first after the CUDA context and the median, against Cohort's\n"
      "  --json FILE    also write the results as JSON (rank 0)\n"
      "Collective sweep, one team (columns as nccl-tests):\n"
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
      "                 Cohort time / MPI time; n/a for fp16/bf16 reductions and avg.  Host\n"
      "                 memory only\n"
      "  -m MEMORY      host (default: host buffers, blocking calls, a host-only team) or cuda:\n"
      "                 each rank binds GPU local rank %% GPUs (cudaSetDevice and its context),\n"
      "                 cudaMalloc's the buffers and enqueues the stream-ordered calls\n"
      "                 (cohort_*_stream) on one non-blocking stream; time = host clock around\n"
      "                 ITERS back-to-back enqueues and one cudaStreamSynchronize, / ITERS (as\n"
      "                 nccl-tests); --check copies results to the host.  A collective the GPU\n"
      "                 does not run yet prints why, in one line.  Exits 77 (skipped) with the\n"
      "                 reason when there is no GPU or no CUDA in this build.  Ranks sharing a\n"
      "                 GPU need COHORT_ALLOW_SHARED_GPU=1, and MPS for meaningful times\n"
      "  --graph N      (cuda) also capture N back-to-back calls per size into a CUDA graph,\n"
      "                 replay it once, then time replays for at least ITERS calls: the graph\n"
      "                 column is the time per call (replay time / N)\n"
      "  --roofline     (cuda) measure the GPU's cudaMemcpy device-to-device bandwidth BW (1 GiB,\n"
      "                 median of 20, 2 x bytes / time); the roof column is, for allreduce, the\n"
      "                 floor 2 x n x S / BW (S bytes per rank, n ranks per GPU) over the time\n"
      "  --no-register  (cuda) leave the buffers unregistered; by default both are registered\n"
      "                 with the team (cohort_mem_register), so large allreduces run zero-copy\n"
      "  --blocking     (cuda) the blocking calls (cohort_allreduce, ...: what MPI's component\n"
      "                 calls) instead of the stream-ordered ones\n"
      "  --vs-nccl      (implies -m cuda) time NCCL's call (libnccl.so.2, loaded at run time:\n"
      "                 ncclAllReduce, ncclReduce, ncclBroadcast, ncclAllGather,\n"
      "                 ncclReduceScatter, ncclSend + ncclRecv in a group for alltoall; none\n"
      "                 for the barrier) on the same buffers and stream, with --graph also\n"
      "                 replayed from a CUDA graph, and the ratios Cohort time / NCCL time;\n"
      "                 a table of the ratios (size by collective) ends the run.  NCCL\n"
      "                 refuses two ranks on one GPU: skipped then, saying why\n"
      "  --json FILE    also write every row as JSON (rank 0)\n"
      "  --calibrate FILE  measure the selection table (-c all unless -c is given): each\n"
      "                 algorithm of each collective that runs on this memory, on 1 and 2\n"
      "                 channels where it splits its buffer, forced through COHORT_COLL_ALGO\n"
      "                 and swept out of place; per size the fastest wins (a new winner must\n"
      "                 be 5%% faster).  Rank 0 writes the rules, for these ranks and hosts,\n"
      "                 to FILE: load it with COHORT_TUNING_FILE=FILE on every rank.  An\n"
      "                 existing FILE is merged: its rules for other collectives, memory, team\n"
      "                 sizes or host counts stay (one file for runs at several sizes); a file\n"
      "                 that is no tuning file, or was measured on another GPU or core count,\n"
      "                 is refused before measuring\n"
      "Time is the average per iteration of the slowest rank.  When its stderr is a terminal,\n"
      "rank 0 shows progress there, on one line it erases before writing results.  Rank 0\n"
      "warns when the ranks of a host outnumber its cores.\n");
}

bool parse_options(int argc, char **argv, Options *opt, std::string *error) {
  static const option options[] = {
      {"team-create", no_argument, nullptr, 't'},  {"json", required_argument, nullptr, 'j'},
      {"host-only", no_argument, nullptr, 'H'},    {"in-place", no_argument, nullptr, 'I'},
      {"out-of-place", no_argument, nullptr, 'O'}, {"check", no_argument, nullptr, 'C'},
      {"vs-mpi", no_argument, nullptr, 'M'},       {"memory", required_argument, nullptr, 'm'},
      {"graph", required_argument, nullptr, 'G'},  {"roofline", no_argument, nullptr, 'R'},
      {"no-register", no_argument, nullptr, 'U'},  {"vs-nccl", no_argument, nullptr, 'N'},
      {"blocking", no_argument, nullptr, 'B'},     {"calibrate", required_argument, nullptr, 'K'},
      {"help", no_argument, nullptr, 'h'},         {nullptr, 0, nullptr, 0}};
  opterr = 0;  // every rank parses: report once, from rank 0
  Given given;
  int c;
  while ((c = getopt_long(argc, argv, ":n:w:c:b:e:f:d:o:r:m:th", options, nullptr)) != -1) {
    if (!parse_option(c, argv, &given, error)) return false;
  }
  if (optind < argc) {
    *error = std::string("unexpected argument ") + argv[optind];
    return false;
  }
  return finish(&given, opt, error);
}

}  // namespace cohort::perf
