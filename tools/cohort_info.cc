// cohort_info: version, build configuration, every parameter with its current value,
// (with --device-check) a kernel run on each visible GPU, and (with --topo) this host's
// topology, paths and rings as team creation would see them.  Needs no MPI job.
#include <dlfcn.h>
#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <string>
#include <vector>

#include "coll/schedule.h"
#include "coll/select.h"
#include "core/build_info.h"
#include "core/build_info_text.h"
#include "core/params.h"
#include "team/transport_table.h"
#include "tl_gpu/window_memory.h"
#include "device_check.h"
#include "tool_version.h"
#include "topo/bandwidth.h"
#include "topo/describe.h"
#include "topo/detect.h"
#include "topo/paths.h"
#include "topo/search.h"
#include "topo/xml.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

constexpr int kMaxHosts = 1 << 20;

void usage(FILE *out) {
  fprintf(out,
          "usage: cohort_info [--build] [--params] [--testing-params] [--algorithms]\n"
          "                   [--device-check] [--gpu-memory]\n"
          "                   [--topo [--topo-file F] [--nodes N] [--p2p-level LEVEL]]\n"
          "       cohort_info --version\n"
          "  --build            version and build configuration\n"
          "  --params           every COHORT_* parameter: type, default, current value, doc\n"
          "  --testing-params   the parameters only Cohort's own tests set (fault injection)\n"
          "  --algorithms       every collective algorithm (schedule) Cohort has, the memory it\n"
          "                     runs on, the selection table, and the transports\n"
          "  --device-check     launch a verify kernel on every visible GPU\n"
          "  --gpu-memory       the device memory a GPU team takes per rank, per peer and per\n"
          "                     peer per block, by local rank count\n"
          "  --topo             this host's topology, the paths between its GPUs and NICs, the\n"
          "                     rings over all its GPUs and the bandwidth model\n"
          "  --topo-file F      --topo for the topology in XML file F instead of this host\n"
          "                     (default: COHORT_TOPO_FILE, else detection)\n"
          "  --nodes N          --topo as for a job of N hosts: rings through a NIC and the\n"
          "                     trees across hosts (default 1)\n"
          "  --p2p-level LEVEL  --topo with P2P up to LEVEL (AUTO, LOC, NVL, NVB, PIX, PXB, PHB,\n"
          "                     SYS; default: COHORT_P2P_LEVEL)\n"
          "  --version          version, git revision, build configuration and NVIDIA driver,\n"
          "                     as every Cohort tool prints it\n"
          "With no option: --build and --params.\n");
}

struct TopoArgs {
  std::string file;  // empty: COHORT_TOPO_FILE, else detect this host
  int hosts = 1;
  std::string p2p_level;  // empty: COHORT_P2P_LEVEL
};

// The P2P level of --p2p-level, or else of COHORT_P2P_LEVEL; AUTO gives kCount (by CPU).
cohort::Status p2p_level_setting(const std::string &option, cohort::topo::PathType *out) {
  int index = 0;
  cohort::Status s = option.empty()
                         ? cohort::param_enum("P2P_LEVEL", &index)
                         : cohort::parse_enum("--p2p-level", option,
                                              cohort::param_find("P2P_LEVEL")->choices, &index);
  if (cohort::is_error(s)) return s;
  *out =
      index == 0 ? cohort::topo::PathType::kCount : static_cast<cohort::topo::PathType>(index - 1);
  return COHORT_SUCCESS;
}

cohort::Status load_topology(const TopoArgs &args, cohort::topo::Topology *topo,
                             std::string *source) {
  std::string file = args.file;
  if (file.empty()) {
    cohort::Status s = cohort::param_string("TOPO_FILE", &file);
    if (cohort::is_error(s)) return s;
  }
  *source = file.empty() ? "detected" : file;
  if (!file.empty()) return cohort::topo::read_xml_file(file, topo);
  return cohort::topo::detect(cohort::topo::DetectOptions{}, topo);
}

int print_topology(const TopoArgs &args) {
  using namespace cohort::topo;
  Topology topo;
  std::string source;
  PathOptions path_options;
  int64_t budget = 0;
  cohort::Status s = load_topology(args, &topo, &source);
  if (!cohort::is_error(s)) s = p2p_level_setting(args.p2p_level, &path_options.p2p_level);
  if (!cohort::is_error(s)) s = cohort::param_int("SEARCH_BUDGET", &budget);
  if (cohort::is_error(s)) {
    fprintf(stderr, "cohort_info: %s\n", cohort::last_error().c_str());
    return 1;
  }
  Paths paths(topo, path_options);
  SearchOptions search_options;
  search_options.cross_node = args.hosts > 1;
  search_options.budget = budget;
  NodeGraph graph = search_rings(topo, paths, topo.of_type(NodeType::kGpu), search_options);
  printf("Topology (%s):\n%s\n", source.c_str(), describe_topology(topo).c_str());
  printf("%s\n", describe_matrix(topo, paths).c_str());
  printf("%s%s\n",
         args.hosts > 1 ? cohort::strprintf("Graph for a job of %d hosts:\n", args.hosts).c_str()
                        : "Graph within this host:\n",
         describe_graph(topo, graph, args.hosts).c_str());
  printf("%s", bandwidth_table_text().c_str());
  return 0;
}

int print_algorithms() {
  printf("Algorithms (collective/name: what it does; the memory it runs on):\n");
  for (const cohort::coll::AlgorithmInfo &info : cohort::coll::algorithm_table()) {
    std::string id = std::string(cohort::coll::collective_name(info.collective)) + "/" + info.name;
    printf("  %-26s %s\n  %-26s memory: %s%s\n", id.c_str(), info.description, "",
           cohort::coll::format_memory_kinds(info.memory).c_str(),
           info.splits ? "; runs on several channels" : "");
  }
  cohort::coll::Selection selection;
  std::string settings;
  if (cohort::is_error(cohort::coll::Selection::from_environment(&selection, &settings))) {
    fprintf(stderr, "cohort_info: %s\n", cohort::last_error().c_str());
    return 1;
  }
  printf("\nSelection (first matching rule; bytes are one rank's message; %s):\n",
         settings.c_str());
  if (!selection.tuning_machine().empty()) {
    printf("  (the tuning file was measured on %s)\n", selection.tuning_machine().c_str());
  }
  printf("%s", selection.describe().c_str());
  printf("\nTransports (a peer is reached through the first that reaches it):\n");
  for (const cohort::TransportInfo &info : cohort::transport_table()) {
    printf("  %-8s %s\n", info.name, info.description);
  }
  return 0;
}

void print_param_table(const std::vector<cohort::ParamSpec> &table) {
  for (const cohort::ParamSpec &spec : table) {
    bool from_env = false;
    std::string value = cohort::param_text(spec, &from_env);
    printf("  COHORT_%-18s %-6s default=%-6s value=%s%s%s\n", spec.name,
           cohort::param_type_name(spec.type), spec.default_value[0] ? spec.default_value : "\"\"",
           value.empty() ? "\"\"" : value.c_str(), spec.unit[0] ? " " : "", spec.unit);
    if (spec.choices[0]) printf("      choices: %s\n", spec.choices);
    printf("      %s\n", spec.doc);
  }
}

// The problems of the environment's COHORT_* variables, with what the library's loaders
// refuse beyond the value's type: a selection rule, a file that cannot be read.
std::vector<cohort::ParamProblem> environment_problems() {
  std::vector<cohort::ParamProblem> problems = cohort::params_check_env();
  auto setting = [](const char *name) { return cohort::param_text(*cohort::param_find(name)); };
  cohort::coll::Selection selection;
  if (cohort::is_error(cohort::coll::Selection::from_environment(&selection, nullptr))) {
    std::string why = cohort::last_error();
    const char *name = why.starts_with("COHORT_TUNING_FILE") ? "TUNING_FILE" : "COLL_ALGO";
    // "COHORT_COLL_ALGO: ..." or "COHORT_TUNING_FILE=/path:3: ...": the name goes before.
    const std::string prefix = std::string("COHORT_") + name + (name[0] == 'T' ? "=" : ": ");
    if (why.starts_with(prefix)) why.erase(0, prefix.size());
    problems.push_back({std::string("COHORT_") + name, setting(name), why});
  }
  for (const char *name : {"TOPO_FILE", "GRAPH_FILE"}) {
    std::string file = setting(name);
    if (!file.empty() && access(file.c_str(), R_OK) != 0) {
      problems.push_back({std::string("COHORT_") + name, file,
                          cohort::strprintf("cannot read the file: %s", strerror(errno))});
    }
  }
  return problems;
}

// The parameter table, then every bad COHORT_* variable; false if there is one.
bool print_params() {
  printf("Parameters (environment variable, type, default, current value):\n");
  print_param_table(cohort::param_table());
  printf("Variables Cohort's scripts read (not the library):\n");
  for (const cohort::ScriptVariable &v : cohort::script_variable_table()) {
    printf("  %-25s %s\n", v.name, v.doc);
  }
  std::vector<cohort::ParamProblem> problems = environment_problems();
  if (problems.empty()) return true;
  printf("Invalid settings in the environment (%zu):\n", problems.size());
  for (const cohort::ParamProblem &p : problems) {
    printf("  %s='%s': %s\n", p.variable.c_str(), p.value.c_str(), p.message.c_str());
  }
  fflush(stdout);  // the list first, when both streams go to one file
  fprintf(stderr, "cohort_info: %zu invalid COHORT_* setting%s (listed above)\n", problems.size(),
          problems.size() == 1 ? "" : "s");
  return false;
}

#if COHORT_HAVE_CUDA
// Why cudaGetDeviceCount found nothing, in the user's terms: the runtime reports a machine
// without any NVIDIA driver as an "insufficient" one.
std::string no_device_reason(cudaError_t err) {
  if (err == cudaSuccess) return "0 devices";
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char *why = dlerror();
    return cohort::strprintf("no NVIDIA driver: libcuda.so.1 cannot be loaded (%s)",
                             why != nullptr ? why : "not found");
  }
  dlclose(driver);
  return cudaGetErrorString(err);
}
#endif

int device_check() {
#if COHORT_HAVE_CUDA
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    printf("device check: no CUDA device visible (%s)\n", no_device_reason(err).c_str());
    return 2;
  }
  int failures = 0;
  for (int d = 0; d < count; ++d) {
    cohort::DeviceCheckResult result;
    if (cohort::is_error(cohort::device_self_check(d, 1 << 24, &result))) {
      printf("device %d: FAILED: %s\n", d, cohort::last_error().c_str());
      ++failures;
      continue;
    }
    printf("device %d: %s sm_%d%d: verify kernel over 16M values ok (%.3f ms)\n", d,
           result.name.c_str(), result.sm_major, result.sm_minor, result.kernel_ms);
  }
  return failures == 0 ? 0 : 1;
#else
  printf("device check: this Cohort was built without CUDA\n");
  return 2;
#endif
}

}  // namespace

int main(int argc, char **argv) {
  if (cohort::tools::asks_version(argc, argv)) {
    cohort::tools::print_version("cohort_info");
    return 0;
  }
  bool build = false, params = false, device = false, topo = false, algorithms = false,
       testing = false, gpu_memory = false;
  TopoArgs topo_args;
  static const option options[] = {{"build", no_argument, nullptr, 'b'},
                                   {"params", no_argument, nullptr, 'p'},
                                   {"device-check", no_argument, nullptr, 'd'},
                                   {"gpu-memory", no_argument, nullptr, 'g'},
                                   {"algorithms", no_argument, nullptr, 'a'},
                                   {"topo", no_argument, nullptr, 't'},
                                   {"topo-file", required_argument, nullptr, 'f'},
                                   {"nodes", required_argument, nullptr, 'n'},
                                   {"p2p-level", required_argument, nullptr, 'l'},
                                   {"testing-params", no_argument, nullptr, 'T'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "bpdgatTf:n:l:h", options, nullptr)) != -1) {
    switch (c) {
      case 'b': build = true; break;
      case 'p': params = true; break;
      case 'T': testing = true; break;
      case 'd': device = true; break;
      case 'g': gpu_memory = true; break;
      case 'a': algorithms = true; break;
      case 't': topo = true; break;
      case 'f':
        topo = true;
        topo_args.file = optarg;
        break;
      case 'l':
        topo = true;
        topo_args.p2p_level = optarg;
        break;
      case 'n': {
        int64_t hosts = 0;
        if (cohort::is_error(cohort::parse_int("--nodes", optarg, 1, &hosts)) ||
            hosts > kMaxHosts) {
          fprintf(stderr, "cohort_info: --nodes takes a host count from 1 to %d, not '%s'\n",
                  kMaxHosts, optarg);
          return 1;
        }
        topo = true;
        topo_args.hosts = static_cast<int>(hosts);
        break;
      }
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "cohort_info: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 1;
  }
  if (!build && !params && !device && !topo && !algorithms && !testing && !gpu_memory) {
    build = params = true;
  }
  if (build) printf("%s", cohort::build_description().c_str());
  bool params_ok = !params || print_params();
  if (testing) {
    printf("Testing parameters (Cohort's own tests set them; never needed in a job):\n");
    print_param_table(cohort::testing_param_table());
  }
  if (algorithms && print_algorithms() != 0) return 1;
  if (gpu_memory) printf("%s", cohort::tl_gpu::describe_window_memory().c_str());
  if (topo) {
    int rc = print_topology(topo_args);
    if (rc != 0) return rc;
  }
  if (device) {
    int rc = device_check();
    if (rc != 0) return rc;
  }
  return params_ok ? 0 : 1;
}
