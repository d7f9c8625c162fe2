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
  std::string path = log_expand_path(pattern, hostname(), static_cast<long>(getpid()));
  s = write_xml_file(*c.topology, path);
  if (is_error(s)) return s;
  c.dumped = true;
  COHORT_LOG_INFO(TOPO, "topology written to %s", path.c_str());
  return COHORT_SUCCESS;
}

}  // namespace

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
    if (is_error(s)) return s;
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
