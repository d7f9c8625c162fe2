#include "topo/host.h"

#include <unistd.h>

#include <mutex>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"
#include "topo/detect.h"
#include "topo/xml.h"

namespace cohort::topo {
namespace {

struct Cache {
  std::mutex mutex;
  std::string file;  // COHORT_TOPO_FILE the cached model came from ("" detected)
  std::shared_ptr<const Topology> topology;
  bool dumped = false;
};

Cache &cache() {
  static Cache *c = new Cache();  // never destroyed: teams may outlive static destructors
  return *c;
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

Status dump_once(Cache &c) {
  std::string pattern;
  Status s = param_string("TOPO_DUMP_FILE", &pattern);
  if (is_error(s) || pattern.empty() || c.dumped) return s;
  std::string path = expand_dump_path(pattern);
  c.dumped = true;  // tried once: a dump is a debugging aid, never a reason to fail
  s = write_xml_file(*c.topology, path);
  if (is_error(s)) {
    COHORT_LOG_WARN(TOPO, "COHORT_TOPO_DUMP_FILE: %s", last_error().c_str());
    return COHORT_SUCCESS;
  }
  COHORT_LOG_INFO(TOPO, "topology written to %s", path.c_str());
  return COHORT_SUCCESS;
}

// When detection itself fails (hwloc cannot read the machine), teams still work: one CPU,
// to which team creation attaches the ranks' GPUs, and the reason said everywhere.
Topology minimal_topology(const std::string &why) {
  COHORT_LOG_WARN(TOPO,
                  "topology detection failed (%s): assuming one CPU with the ranks' GPUs "
                  "on it; rings will follow rank order",
                  why.c_str());
  Topology topo;
  topo.host = hostname();
  Node cpu;
  cpu.type = NodeType::kCpu;
  cpu.id = "cpu0";
  topo.add_node(cpu);
  topo.assumptions.push_back("detection failed (" + why + "): one CPU assumed");
  return topo;
}

}  // namespace

std::string expand_dump_path(const std::string &pattern) {
  return log_expand_path(pattern, hostname(), static_cast<long>(getpid()));
}

Status host_topology(HostTopology *out) {
  std::string file;
  Status s = param_string("TOPO_FILE", &file);
  if (is_error(s)) return s;
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.topology || c.file != file) {
    auto topo = std::make_shared<Topology>();
    int64_t start = now_ns();
    s = file.empty() ? detect(DetectOptions{}, topo.get()) : read_xml_file(file, topo.get());
    if (is_error(s) && !file.empty()) {  // the user's file: theirs to fix
      return failf(s, "COHORT_TOPO_FILE: %s", last_error().c_str());
    }
    if (is_error(s)) *topo = minimal_topology(last_error());
    if (!file.empty()) {  // detect() logs its own summary and assumptions
      COHORT_LOG_INFO(TOPO, "topology of %s loaded from %s in %.1f ms: %zu nodes, %zu links",
                      topo->host.c_str(), file.c_str(), (now_ns() - start) / 1e6,
                      topo->nodes.size(), topo->links.size());
    }
    c.topology = std::move(topo);
    c.file = file;
    c.dumped = false;
  }
  s = dump_once(c);
  if (is_error(s)) return s;
  out->topology = c.topology;
  out->from_file = !file.empty();
  out->source = file.empty() ? "detected" : file;
  return COHORT_SUCCESS;
}

}  // namespace cohort::topo
