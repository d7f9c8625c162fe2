#include "topo/xml.h"

#include <libxml/tree.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "topo/bandwidth.h"
#include "topo/rules.h"
#include "topo/xml_io.h"

namespace cohort::topo {
namespace {

using xml_io::c_chars;
using xml_io::DocWriter;
using xml_io::Element;
using xml_io::format_number;
using xml_io::quoted;
using xml_io::XmlDoc;

constexpr const char *kRootName = "cohort_topology";
constexpr int kFormatVersion = 1;

// Ranges of the numeric attributes.
constexpr int kMaxSm = 999;
constexpr int kMaxNuma = 65535;
constexpr int kMaxNvlinkCount = 1024;
constexpr int kMaxPciGen = 6;
constexpr int kMaxPciWidth = 32;

// The attributes each element may carry, in the order to_xml() writes them.
constexpr const char *kGpuAttributes[] = {"id", "sm", "uuid"};
constexpr const char *kIdOnlyAttributes[] = {"id"};
constexpr const char *kCpuAttributes[] = {"id", "numa", "arch", "vendor"};
constexpr const char *kPortAttributes[] = {"id", "name", "speed"};  // nic and net
constexpr const char *kRootAttributes[] = {"version", "host"};
constexpr const char *kLinkAttributes[] = {"a",   "b",     "type", "count",
                                           "gen", "width", "bw",   "bw_back"};
constexpr const char *kPairAttributes[] = {"a", "b"};
constexpr const char *kAssumedAttributes[] = {"text"};

std::span<const char *const> node_attributes(NodeType type) {
  switch (type) {
    case NodeType::kGpu: return kGpuAttributes;
    case NodeType::kCpu: return kCpuAttributes;
    case NodeType::kNic:
    case NodeType::kNet: return kPortAttributes;
    default: return kIdOnlyAttributes;
  }
}

// GPUs, PCI switches and NICs are named by their PCI bus id.
bool has_bus_id(NodeType type) {
  return type == NodeType::kGpu || type == NodeType::kPci || type == NodeType::kNic;
}

// ------------------------------------------------------------------------------- writing

void write_node(DocWriter *writer, const Node &node) {
  xmlNode *element = writer->add(node_type_name(node.type));
  DocWriter::set(element, "id", node.id);
  switch (node.type) {
    case NodeType::kGpu:
      if (node.sm > 0) DocWriter::set(element, "sm", std::to_string(node.sm));
      if (!node.uuid.empty()) DocWriter::set(element, "uuid", node.uuid);
      break;
    case NodeType::kCpu:
      DocWriter::set(element, "numa", std::to_string(node.numa));
      if (!node.arch.empty()) DocWriter::set(element, "arch", node.arch);
      if (!node.vendor.empty()) DocWriter::set(element, "vendor", node.vendor);
      break;
    case NodeType::kNic:
    case NodeType::kNet:
      if (!node.name.empty()) DocWriter::set(element, "name", node.name);
      if (node.speed_gbps > 0) DocWriter::set(element, "speed", format_number(node.speed_gbps));
      break;
    default: break;
  }
}

void write_link(DocWriter *writer, const Topology &topo, const Link &link) {
  const int back = topo.link_between(link.to, link.from);
  // One element per pair: the direction from the lower index carries both bandwidths.
  if (link.from > link.to && back >= 0) return;
  xmlNode *element = writer->add("link");
  DocWriter::set(element, "a", topo.nodes[link.from].id);
  DocWriter::set(element, "b", topo.nodes[link.to].id);
  DocWriter::set(element, "type", link_type_name(link.type));
  if (link.type == LinkType::kNvLink) DocWriter::set(element, "count", std::to_string(link.count));
  if (link.pci_gen > 0) DocWriter::set(element, "gen", std::to_string(link.pci_gen));
  if (link.pci_width > 0) DocWriter::set(element, "width", std::to_string(link.pci_width));
  const std::string bw = format_number(link.bw);
  DocWriter::set(element, "bw", bw);
  if (back >= 0) {
    const std::string bw_back = format_number(topo.links[back].bw);
    if (bw_back != bw) DocWriter::set(element, "bw_back", bw_back);
  }
}

// ------------------------------------------------------------------------------- reading

// Reads a parsed document into a Topology, naming the file and line in every error.
class Loader : xml_io::Reader {
 public:
  // Users write topology files by hand: no DTD, so no entity can blow a file up.
  explicit Loader(const std::string &source)
      : Reader("topology", source, xml_io::Doctype::kRefused) {}
  using Reader::parse;
  Status load(xmlNode *root, Topology *out);

 private:
  Status read_root(xmlNode *root);
  Status read_nodes(xmlNode *root);
  Status read_node(xmlNode *element, NodeType type);
  Status check_node_count(const Element &e, NodeType type);
  Status read_node_id(const Element &e, NodeType type, std::string *id) const;
  Status read_node_details(const Element &e, Node *node) const;
  Status read_speed(const Element &e, double *gbps) const;
  Status check_unique_identity(const Element &e, const Node &node);
  Status read_relations(xmlNode *root);
  Status read_link(xmlNode *element);
  Status read_link_numbers(const Element &e, LinkType type, Link *link, double *bw_back) const;
  Status read_bandwidth(const Element &e, const char *attr, double *bw) const;
  Status check_link_ends(const Element &e, LinkType type, int a, int b) const;
  Status resolve(const Element &e, const char *attr, int *index) const;
  Status read_no_p2p(xmlNode *element);
  Status read_assumed(xmlNode *element);
  double table_bw(LinkType type, int a, int b, int count, int gen, int width) const;
  const Node *end_of_type(int a, int b, NodeType type) const;
  Status check_gpus_reach_a_cpu() const;
  Status finish(Topology *out);

  Topology topo_;
  std::map<std::pair<NodeType, std::string>, long> node_lines_;
  std::vector<long> line_of_node_;  // by node index, before canonicalize()
  std::multimap<std::string, int> nodes_by_id_;
  std::map<std::pair<int, int>, long> link_lines_;
  int nodes_of_type_[static_cast<int>(NodeType::kCount)] = {};
  std::map<std::string, int> gpu_of_uuid_;  // lower-case uuid -> node
  std::map<int, int> cpu_of_numa_;
};

Status Loader::load(xmlNode *root, Topology *out) {
  if (Status s = read_root(root); is_error(s)) return s;
  if (Status s = read_nodes(root); is_error(s)) return s;
  if (Status s = read_relations(root); is_error(s)) return s;
  return finish(out);
}

Status Loader::read_root(xmlNode *root) {
  if (Status s = check_root(root, kRootName, kRootAttributes, kFormatVersion); is_error(s)) {
    return s;
  }
  const Element e(root);
  if (const std::string *host = e.get("host")) topo_.host = *host;
  return COHORT_SUCCESS;
}

std::string lower_case(std::string text) {
  for (char &c : text) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return text;
}

bool is_relation_element(const char *name) {
  return strcmp(name, "link") == 0 || strcmp(name, "no_p2p") == 0 || strcmp(name, "assumed") == 0;
}

// First pass: the nodes, so that links may name nodes written after them.
Status Loader::read_nodes(xmlNode *root) {
  return for_each_element(root, [&](xmlNode *child) {
    const char *name = c_chars(child->name);
    NodeType type;
    if (child->ns == nullptr && node_type_from_name(name, &type)) return read_node(child, type);
    if (child->ns != nullptr || !is_relation_element(name)) return fail_unknown_element(child);
    return COHORT_SUCCESS;
  });
}

Status Loader::read_node(xmlNode *element, NodeType type) {
  Element e(element);
  if (Status s = check_attributes(e, node_attributes(type)); is_error(s)) return s;
  if (Status s = check_leaf(element); is_error(s)) return s;
  if (Status s = check_node_count(e, type); is_error(s)) return s;
  Node node;
  node.type = type;
  if (Status s = read_node_id(e, type, &node.id); is_error(s)) return s;
  if (Status s = read_node_details(e, &node); is_error(s)) return s;
  auto [first, inserted] = node_lines_.emplace(std::make_pair(type, node.id), e.line());
  if (!inserted) {
    return fail_attr(e, "id",
                     strprintf("duplicate %s id (first on line %ld)", e.name(), first->second));
  }
  if (Status s = check_unique_identity(e, node); is_error(s)) return s;
  const std::string id = node.id;
  const int index = topo_.add_node(std::move(node));
  nodes_by_id_.emplace(id, index);
  line_of_node_.push_back(e.line());
  if (type == NodeType::kGpu && !topo_.nodes[index].uuid.empty()) {
    gpu_of_uuid_.emplace(lower_case(topo_.nodes[index].uuid), index);
  }
  if (type == NodeType::kCpu && topo_.nodes[index].numa >= 0) {
    cpu_of_numa_.emplace(topo_.nodes[index].numa, index);
  }
  return COHORT_SUCCESS;
}

// Counted as they come, so that a file of a million nodes is refused at the first too many.
Status Loader::check_node_count(const Element &e, NodeType type) {
  if (static_cast<int>(topo_.nodes.size()) >= rules::kMaxNodes) {
    return fail_at(e.line(), strprintf("<%s>: one node too many (rule: at most %d nodes per host)",
                                       e.name(), rules::kMaxNodes));
  }
  const int max = rules::max_nodes_of(type);
  if (max > 0 && nodes_of_type_[static_cast<int>(type)] >= max) {
    return fail_at(e.line(), strprintf("<%s>: one too many (rule: at most %d %s)", e.name(), max,
                                       rules::limit_name(type)));
  }
  ++nodes_of_type_[static_cast<int>(type)];
  return COHORT_SUCCESS;
}

// A GPU's uuid and a CPU's NUMA node name one device each: two nodes with one would be one
// device counted twice.
Status Loader::check_unique_identity(const Element &e, const Node &node) {
  if (node.type == NodeType::kGpu && !node.uuid.empty()) {
    auto same = gpu_of_uuid_.find(lower_case(node.uuid));
    if (same == gpu_of_uuid_.end()) return COHORT_SUCCESS;
    return fail_attr(e, "uuid",
                     strprintf("also the uuid of gpu %s on line %ld (rule: GPU uuids are unique)",
                               topo_.nodes[same->second].id.c_str(), line_of_node_[same->second]));
  }
  if (node.type == NodeType::kCpu && node.numa >= 0) {
    auto same = cpu_of_numa_.find(node.numa);
    if (same == cpu_of_numa_.end()) return COHORT_SUCCESS;
    return fail_attr(e, "numa",
                     strprintf("also the NUMA node of %s on line %ld (rule: one CPU per NUMA "
                               "node)",
                               topo_.nodes[same->second].id.c_str(), line_of_node_[same->second]));
  }
  return COHORT_SUCCESS;
}

Status Loader::read_node_id(const Element &e, NodeType type, std::string *id) const {
  if (Status s = require(e, "id", id); is_error(s)) return s;
  if (id->empty()) return fail_attr(e, "id", "an id may not be empty");
  if (!has_bus_id(type)) return COHORT_SUCCESS;
  const std::string bus_id = normalize_bus_id(*id);
  if (bus_id.empty()) return fail_attr(e, "id", "not a PCI bus id (dddd:bb:dd.f)");
  *id = bus_id;
  return COHORT_SUCCESS;
}

Status Loader::read_node_details(const Element &e, Node *node) const {
  auto text = [&](const char *attr, std::string *out) {
    if (const std::string *value = e.get(attr)) *out = *value;
  };
  switch (node->type) {
    case NodeType::kGpu: {
      text("uuid", &node->uuid);
      return read_int(e, "sm", 0, kMaxSm, &node->sm);
    }
    case NodeType::kCpu:
      text("arch", &node->arch);
      text("vendor", &node->vendor);
      return read_int(e, "numa", -1, kMaxNuma, &node->numa);
    case NodeType::kNic:
    case NodeType::kNet: text("name", &node->name); return read_speed(e, &node->speed_gbps);
    default: return COHORT_SUCCESS;
  }
}

// Gb/s: 0 (unknown), or a rate whose bytes per second are a physical link bandwidth.
Status Loader::read_speed(const Element &e, double *gbps) const {
  if (Status s = read_number(e, "speed", true, gbps); is_error(s)) return s;
  if (*gbps == 0 || (*gbps >= 8 * rules::kMinBw && *gbps <= 8 * rules::kMaxBw)) {
    return COHORT_SUCCESS;
  }
  return fail_attr(e, "speed",
                   strprintf("out of range: 0 (unknown) or %g..%g Gb/s (rule: bandwidth is "
                             "physical)",
                             8 * rules::kMinBw, 8 * rules::kMaxBw));
}

// Second pass: links, peer-access exceptions and assumptions.
Status Loader::read_relations(xmlNode *root) {
  for (xmlNode *child = root->children; child != nullptr; child = child->next) {
    if (child->type != XML_ELEMENT_NODE) continue;
    const char *name = c_chars(child->name);
    Status s = COHORT_SUCCESS;
    if (strcmp(name, "link") == 0) s = read_link(child);
    if (strcmp(name, "no_p2p") == 0) s = read_no_p2p(child);
    if (strcmp(name, "assumed") == 0) s = read_assumed(child);
    if (is_error(s)) return s;
  }
  return COHORT_SUCCESS;
}

// A reference matches a node by its exact id, or a bus-id node by the normalized form.
Status Loader::resolve(const Element &e, const char *attr, int *index) const {
  std::string ref;
  if (Status s = require(e, attr, &ref); is_error(s)) return s;
  std::vector<int> found;
  auto [begin, end] = nodes_by_id_.equal_range(ref);
  for (auto it = begin; it != end; ++it) found.push_back(it->second);
  const std::string bus_id = normalize_bus_id(ref);
  if (!bus_id.empty() && bus_id != ref) {
    auto [bus_begin, bus_end] = nodes_by_id_.equal_range(bus_id);
    for (auto it = bus_begin; it != bus_end; ++it) {
      if (has_bus_id(topo_.nodes[it->second].type)) found.push_back(it->second);
    }
  }
  if (found.empty()) return fail_attr(e, attr, "no node with this id");
  if (found.size() > 1) {
    return fail_attr(e, attr,
                     strprintf("ambiguous id: names a %s and a %s node",
                               node_type_name(topo_.nodes[found[0]].type),
                               node_type_name(topo_.nodes[found[1]].type)));
  }
  *index = found[0];
  return COHORT_SUCCESS;
}

Status Loader::read_link(xmlNode *element) {
  Element e(element);
  if (Status s = check_attributes(e, kLinkAttributes); is_error(s)) return s;
  if (Status s = check_leaf(element); is_error(s)) return s;
  int a = -1, b = -1;
  if (Status s = resolve(e, "a", &a); is_error(s)) return s;
  if (Status s = resolve(e, "b", &b); is_error(s)) return s;
  if (a == b) return fail_attr(e, "b", "a link from a node to itself");
  std::string type_name;
  if (Status s = require(e, "type", &type_name); is_error(s)) return s;
  LinkType type;
  if (!link_type_from_name(type_name, &type)) {
    return fail_attr(e, "type", "unknown link type (nvlink, pci, cpu or net)");
  }
  Link link;
  double bw_back = -1;
  if (Status s = read_link_numbers(e, type, &link, &bw_back); is_error(s)) return s;
  auto [first, inserted] = link_lines_.emplace(std::minmax(a, b), e.line());
  if (!inserted) {
    return fail_at(e.line(), strprintf("link a=%s b=%s: duplicate link between these nodes "
                                       "(first on line %ld)",
                                       quoted(*e.get("a")).c_str(), quoted(*e.get("b")).c_str(),
                                       first->second));
  }
  if (static_cast<int>(link_lines_.size()) > rules::kMaxLinks) {
    return fail_at(e.line(), strprintf("<link>: one link too many (rule: at most %d links per "
                                       "host)",
                                       rules::kMaxLinks));
  }
  if (Status s = check_link_ends(e, type, a, b); is_error(s)) return s;
  if (link.bw < 0) link.bw = table_bw(type, a, b, link.count, link.pci_gen, link.pci_width);
  topo_.connect(a, b, type, link.bw, bw_back, link.count, link.pci_gen, link.pci_width);
  return COHORT_SUCCESS;
}

// count, gen, width, bw and bw_back; link->bw stays negative when the file leaves it out.
Status Loader::read_link_numbers(const Element &e, LinkType type, Link *link,
                                 double *bw_back) const {
  // Only NVLink links bundle several links; a count elsewhere would be lost on the next dump.
  if (e.get("count") != nullptr && type != LinkType::kNvLink) {
    return fail_attr(e, "count", "only nvlink links have a count");
  }
  link->bw = -1;
  if (Status s = read_int(e, "count", 1, kMaxNvlinkCount, &link->count); is_error(s)) return s;
  if (Status s = read_int(e, "gen", 1, kMaxPciGen, &link->pci_gen); is_error(s)) return s;
  if (Status s = read_int(e, "width", 1, kMaxPciWidth, &link->pci_width); is_error(s)) return s;
  if (Status s = read_bandwidth(e, "bw", &link->bw); is_error(s)) return s;
  return read_bandwidth(e, "bw_back", bw_back);
}

// GB/s, finite, within what links can be: a file's 1e308 or 4e-320 would make every sum of
// bandwidths infinite or every ratio of them meaningless.
Status Loader::read_bandwidth(const Element &e, const char *attr, double *bw) const {
  double value = 0;
  if (Status s = read_number(e, attr, false, &value); is_error(s)) return s;
  if (e.get(attr) == nullptr) return COHORT_SUCCESS;
  if (value < rules::kMinBw || value > rules::kMaxBw) {
    return fail_attr(e, attr,
                     strprintf("out of range %g..%g GB/s (rule: bandwidth is physical)",
                               rules::kMinBw, rules::kMaxBw));
  }
  *bw = value;
  return COHORT_SUCCESS;
}

Status Loader::check_link_ends(const Element &e, LinkType type, int a, int b) const {
  const Node &x = topo_.nodes[a];
  const Node &y = topo_.nodes[b];
  const char *problem = rules::link_ends_problem(type, x.type, y.type);
  if (problem == nullptr) return COHORT_SUCCESS;
  return fail_at(e.line(), strprintf("<link type=\"%s\"> between %s %s and %s %s: %s (rule: link "
                                     "type matches its ends)",
                                     link_type_name(type), node_type_name(x.type), x.id.c_str(),
                                     node_type_name(y.type), y.id.c_str(), problem));
}

const Node *Loader::end_of_type(int a, int b, NodeType type) const {
  if (topo_.nodes[a].type == type) return &topo_.nodes[a];
  if (topo_.nodes[b].type == type) return &topo_.nodes[b];
  return nullptr;
}

// The bandwidth table's figure for a link the file gives no `bw` for.
double Loader::table_bw(LinkType type, int a, int b, int count, int gen, int width) const {
  switch (type) {
    case LinkType::kNvLink: {
      // Both ends of an NVLink run one generation: the lower known sm of the GPU ends sets it.
      int sm = 0;
      for (int end : {a, b}) {
        const Node &node = topo_.nodes[end];
        if (node.type == NodeType::kGpu && node.sm > 0)
          sm = sm > 0 ? std::min(sm, node.sm) : node.sm;
      }
      return count * nvlink_bw(sm);
    }
    case LinkType::kPci: return pci_bw(gen, width);
    case LinkType::kCpu: {
      const Node *cpu = end_of_type(a, b, NodeType::kCpu);
      return cpu_link_bw(cpu != nullptr ? cpu->vendor : std::string());
    }
    case LinkType::kNet: {
      const Node *nic = end_of_type(a, b, NodeType::kNic);
      return nic_bw(nic != nullptr ? nic->speed_gbps : 0);
    }
    default: return 0;
  }
}

Status Loader::read_no_p2p(xmlNode *element) {
  Element e(element);
  if (Status s = check_attributes(e, kPairAttributes); is_error(s)) return s;
  if (Status s = check_leaf(element); is_error(s)) return s;
  std::string ids[2];
  const char *attrs[2] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    if (Status s = require(e, attrs[i], &ids[i]); is_error(s)) return s;
    ids[i] = normalize_bus_id(ids[i]);
    if (node_lines_.count({NodeType::kGpu, ids[i]}) == 0) {
      return fail_attr(e, attrs[i], "no gpu with this id");
    }
  }
  if (ids[0] == ids[1]) return fail_attr(e, "b", "a GPU paired with itself");
  topo_.no_p2p.emplace_back(ids[0], ids[1]);
  return COHORT_SUCCESS;
}

Status Loader::read_assumed(xmlNode *element) {
  Element e(element);
  if (Status s = check_attributes(e, kAssumedAttributes); is_error(s)) return s;
  if (Status s = check_leaf(element); is_error(s)) return s;
  std::string text;
  if (Status s = require(e, "text", &text); is_error(s)) return s;
  topo_.assumptions.push_back(std::move(text));
  return COHORT_SUCCESS;
}

Status Loader::check_gpus_reach_a_cpu() const {
  const std::vector<int> stranded = rules::gpus_without_cpu(topo_);
  if (stranded.empty()) return COHORT_SUCCESS;
  const int gpu = stranded.front();
  return fail_at(line_of_node_[gpu],
                 strprintf("gpu %s: no PCI path to any CPU (rule: every GPU reaches a CPU)",
                           topo_.nodes[gpu].id.c_str()));
}

Status Loader::finish(Topology *out) {
  if (Status s = check_gpus_reach_a_cpu(); is_error(s)) return s;
  if (Status s = validate(topo_); is_error(s)) {
    std::string what = last_error();
    constexpr std::string_view kPrefix = "topology: ";
    if (what.starts_with(kPrefix)) what.erase(0, kPrefix.size());
    return fail_file(what);
  }
  canonicalize(&topo_);
  *out = std::move(topo_);
  return COHORT_SUCCESS;
}

}  // namespace

std::string to_xml(const Topology &topo) {
  Topology canonical = topo;
  canonicalize(&canonical);
  DocWriter writer(kRootName);
  DocWriter::set(writer.root(), "version", std::to_string(kFormatVersion));
  if (!canonical.host.empty()) DocWriter::set(writer.root(), "host", canonical.host);
  for (const Node &node : canonical.nodes) write_node(&writer, node);
  for (const Link &link : canonical.links) write_link(&writer, canonical, link);
  for (const auto &[a, b] : canonical.no_p2p) {
    xmlNode *element = writer.add("no_p2p");
    DocWriter::set(element, "a", a);
    DocWriter::set(element, "b", b);
  }
  for (const std::string &text : canonical.assumptions) {
    DocWriter::set(writer.add("assumed"), "text", text);
  }
  return writer.finish();
}

Status write_xml_file(const Topology &topo, const std::string &path) {
  return xml_io::write_text_file("topology", path, to_xml(topo));
}

Status from_xml(const std::string &text, const std::string &source, Topology *out) {
  Loader loader(source);
  XmlDoc doc;
  if (Status s = loader.parse(text, &doc); is_error(s)) return s;
  return loader.load(xmlDocGetRootElement(doc.get()), out);
}

Status read_xml_file(const std::string &path, Topology *out) {
  std::string text;
  if (Status s = xml_io::read_text_file("topology", path, &text); is_error(s)) return s;
  return from_xml(text, path, out);
}

}  // namespace cohort::topo
