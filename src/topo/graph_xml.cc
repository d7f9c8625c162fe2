#include "topo/graph_xml.h"

#include <libxml/tree.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "topo/xml_io.h"

namespace cohort::topo {
namespace {

using xml_io::DocWriter;
using xml_io::Element;
using xml_io::XmlDoc;

constexpr const char *kKind = "graph";
constexpr const char *kRootName = "cohort_graph";
constexpr int kFormatVersion = 1;

// The attributes each element may carry, in the order graph_to_xml() writes them.
constexpr const char *kRootAttributes[] = {"version", "host", "channels", "bw",
                                           "intra",   "net",  "fallback", "steps"};
constexpr const char *kChannelAttributes[] = {"net"};
constexpr const char *kGpuAttributes[] = {"id"};

std::string path_type_names() {
  std::string names;
  for (int t = 0; t < static_cast<int>(PathType::kCount); ++t) {
    names += (names.empty() ? "" : ", ") + std::string(path_type_name(static_cast<PathType>(t)));
  }
  return names;
}

// Reads a parsed document into the rings of `gpus`, naming the file and line in every error.
class GraphLoader : xml_io::Reader {
 public:
  GraphLoader(const std::string &source, const Topology &topo, const Paths &paths,
              const std::vector<int> &gpus)
      : Reader(kKind, source), topo_(topo), paths_(paths), gpus_(gpus) {}
  using Reader::parse;
  Status check_gpus() const;
  Status load(xmlNode *root, NodeGraph *out);

 private:
  Status read_root(xmlNode *root, int *channels);
  Status read_path_type(const Element &e, const char *attr) const;
  Status read_channels(xmlNode *root, int channels);
  Status read_channel(xmlNode *element);
  Status read_net(const Element &e, int *net) const;
  Status read_gpu(xmlNode *element, int *gpu) const;
  Status check_ring(const Element &e, const std::vector<int> &ring, int net) const;
  Status check_hop(const Element &e, int from, int to) const;
  std::string gpus_in_use() const;

  const Topology &topo_;
  const Paths &paths_;
  const std::vector<int> &gpus_;
  NodeGraph graph_;
};

Status GraphLoader::check_gpus() const {
  if (gpus_.empty()) return fail_file("no GPU in use to place on rings");
  for (int g : gpus_) {
    if (g < 0 || g >= static_cast<int>(topo_.nodes.size()) ||
        topo_.nodes[g].type != NodeType::kGpu) {
      return fail_file(strprintf("node %d is not a GPU of the topology", g));
    }
  }
  return COHORT_SUCCESS;
}

Status GraphLoader::load(xmlNode *root, NodeGraph *out) {
  int channels = 0;
  if (Status s = read_root(root, &channels); is_error(s)) return s;
  if (Status s = read_channels(root, channels); is_error(s)) return s;
  measure_graph(topo_, paths_, &graph_);
  *out = std::move(graph_);
  return COHORT_SUCCESS;
}

// The file's bw is kept when the paths allow more; intra and net are recomputed, so they
// need only be valid names.
Status GraphLoader::read_root(xmlNode *root, int *channels) {
  if (Status s = check_root(root, kRootName, kRootAttributes, kFormatVersion); is_error(s)) {
    return s;
  }
  const Element e(root);
  std::string text;
  if (Status s = require(e, "channels", &text); is_error(s)) return s;
  if (Status s = read_int(e, "channels", 1, kMaxChannels, channels); is_error(s)) return s;
  if (Status s = read_number(e, "bw", false, &graph_.bw); is_error(s)) return s;
  if (Status s = read_path_type(e, "intra"); is_error(s)) return s;
  if (Status s = read_path_type(e, "net"); is_error(s)) return s;
  int fallback = 0;
  if (Status s = read_int(e, "fallback", 0, 1, &fallback); is_error(s)) return s;
  graph_.fallback = fallback != 0;
  long long steps = 0;
  if (Status s = read_int(e, "steps", 0, std::numeric_limits<long>::max(), &steps); is_error(s)) {
    return s;
  }
  graph_.steps = static_cast<long>(steps);
  return COHORT_SUCCESS;
}

Status GraphLoader::read_path_type(const Element &e, const char *attr) const {
  const std::string *name = e.get(attr);
  PathType type;
  if (name == nullptr || path_type_from_name(*name, &type)) return COHORT_SUCCESS;
  return fail_attr(e, attr, "unknown path type (" + path_type_names() + ")");
}

Status GraphLoader::read_channels(xmlNode *root, int channels) {
  const Status walked = for_each_element(root, [&](xmlNode *child) {
    if (!xml_io::is_named(child, "channel")) return fail_unknown_element(child);
    if (static_cast<int>(graph_.rings.size()) == channels) {
      return fail_at(xml_io::line_of(child),
                     strprintf("more <channel> elements than channels='%d'", channels));
    }
    return read_channel(child);
  });
  if (is_error(walked)) return walked;
  if (static_cast<int>(graph_.rings.size()) < channels) {
    return fail_attr(Element(root), "channels",
                     strprintf("the file holds %zu <channel> elements", graph_.rings.size()));
  }
  return COHORT_SUCCESS;
}

// Every GPU in use once, in ring order, and nothing else.
Status GraphLoader::read_channel(xmlNode *element) {
  const Element e(element);
  if (Status s = check_attributes(e, kChannelAttributes); is_error(s)) return s;
  int net = -1;
  if (Status s = read_net(e, &net); is_error(s)) return s;
  std::vector<int> ring;
  std::map<int, long> gpu_lines;
  const Status walked = for_each_element(element, [&](xmlNode *child) {
    if (!xml_io::is_named(child, "gpu")) return fail_unknown_element(child);
    int gpu = -1;
    if (Status s = read_gpu(child, &gpu); is_error(s)) return s;
    auto [first, inserted] = gpu_lines.emplace(gpu, xml_io::line_of(child));
    if (!inserted) {
      return fail_attr(
          Element(child), "id",
          strprintf("GPU listed twice in this channel (first on line %ld)", first->second));
    }
    ring.push_back(gpu);
    return COHORT_SUCCESS;
  });
  if (is_error(walked)) return walked;
  for (int g : gpus_) {
    if (gpu_lines.count(g) == 0) {
      return fail_at(e.line(), strprintf("channel %zu: GPU %s is missing (a channel holds every "
                                         "GPU in use: %s)",
                                         graph_.rings.size(), topo_.nodes[g].id.c_str(),
                                         gpus_in_use().c_str()));
    }
  }
  if (Status s = check_ring(e, ring, net); is_error(s)) return s;
  graph_.rings.push_back(std::move(ring));
  graph_.nets.push_back(net);
  return COHORT_SUCCESS;
}

Status GraphLoader::read_net(const Element &e, int *net) const {
  const std::string *id = e.get("net");
  if (id == nullptr) return COHORT_SUCCESS;
  *net = topo_.find(NodeType::kNet, *id);
  if (*net < 0) return fail_attr(e, "net", "no net node with this id in the topology");
  return COHORT_SUCCESS;
}

Status GraphLoader::read_gpu(xmlNode *element, int *gpu) const {
  const Element e(element);
  if (Status s = check_attributes(e, kGpuAttributes); is_error(s)) return s;
  if (Status s = check_leaf(element); is_error(s)) return s;
  std::string id;
  if (Status s = require(e, "id", &id); is_error(s)) return s;
  const std::string bus_id = normalize_bus_id(id);
  if (bus_id.empty()) return fail_attr(e, "id", "not a PCI bus id (dddd:bb:dd.f)");
  *gpu = topo_.find(NodeType::kGpu, bus_id);
  if (*gpu < 0) return fail_attr(e, "id", "no GPU with this id in the topology");
  if (std::find(gpus_.begin(), gpus_.end(), *gpu) == gpus_.end()) {
    return fail_attr(e, "id", "GPU not in use (in use: " + gpus_in_use() + ")");
  }
  return COHORT_SUCCESS;
}

// Each hop must have a path, or the measured bandwidth would be 0.
Status GraphLoader::check_ring(const Element &e, const std::vector<int> &ring, int net) const {
  const size_t hops = net >= 0 ? ring.size() - 1 : ring.size();
  for (size_t i = 0; i < hops && ring.size() > 1; ++i) {
    if (Status s = check_hop(e, ring[i], ring[(i + 1) % ring.size()]); is_error(s)) return s;
  }
  if (net < 0) return COHORT_SUCCESS;
  if (Status s = check_hop(e, net, ring.front()); is_error(s)) return s;
  return check_hop(e, ring.back(), net);
}

Status GraphLoader::check_hop(const Element &e, int from, int to) const {
  if (paths_.get(from, to).type != PathType::kDis) return COHORT_SUCCESS;
  return fail_at(e.line(),
                 strprintf("channel %zu: no path from %s %s to %s %s", graph_.rings.size(),
                           node_type_name(topo_.nodes[from].type), topo_.nodes[from].id.c_str(),
                           node_type_name(topo_.nodes[to].type), topo_.nodes[to].id.c_str()));
}

std::string GraphLoader::gpus_in_use() const {
  std::string ids;
  for (int g : gpus_) ids += (ids.empty() ? "" : ", ") + topo_.nodes[g].id;
  return ids;
}

}  // namespace

std::string graph_to_xml(const Topology &topo, const NodeGraph &graph) {
  DocWriter writer(kRootName);
  xmlNode *root = writer.root();
  DocWriter::set(root, "version", std::to_string(kFormatVersion));
  if (!topo.host.empty()) DocWriter::set(root, "host", topo.host);
  DocWriter::set(root, "channels", std::to_string(graph.rings.size()));
  DocWriter::set(root, "bw", xml_io::format_number(graph.bw));
  DocWriter::set(root, "intra", path_type_name(graph.intra_type));
  DocWriter::set(root, "net", path_type_name(graph.net_type));
  DocWriter::set(root, "fallback", graph.fallback ? "1" : "0");
  DocWriter::set(root, "steps", std::to_string(graph.steps));
  for (size_t c = 0; c < graph.rings.size(); ++c) {
    xmlNode *channel = writer.add("channel");
    const int net = c < graph.nets.size() ? graph.nets[c] : -1;
    if (net >= 0) DocWriter::set(channel, "net", topo.nodes[net].id);
    for (int gpu : graph.rings[c]) {
      DocWriter::set(writer.add("gpu", channel), "id", topo.nodes[gpu].id);
    }
  }
  return writer.finish();
}

Status write_graph_file(const Topology &topo, const NodeGraph &graph, const std::string &path) {
  return xml_io::write_text_file(kKind, path, graph_to_xml(topo, graph));
}

Status graph_from_xml(const std::string &text, const std::string &source, const Topology &topo,
                      const Paths &paths, const std::vector<int> &gpus, NodeGraph *out) {
  GraphLoader loader(source, topo, paths, gpus);
  if (Status s = loader.check_gpus(); is_error(s)) return s;
  XmlDoc doc;
  if (Status s = loader.parse(text, &doc); is_error(s)) return s;
  return loader.load(xmlDocGetRootElement(doc.get()), out);
}

Status read_graph_file(const std::string &path, const Topology &topo, const Paths &paths,
                       const std::vector<int> &gpus, NodeGraph *out) {
  std::string text;
  if (Status s = xml_io::read_text_file(kKind, path, &text); is_error(s)) return s;
  return graph_from_xml(text, path, topo, paths, gpus, out);
}

}  // namespace cohort::topo
