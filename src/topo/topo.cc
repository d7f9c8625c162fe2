#include "topo/topo.h"

#include <strings.h>

#include <cstdio>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>

namespace cohort::topo {
namespace {

constexpr const char *kNodeNames[] = {"gpu", "nvswitch", "pci", "cpu", "nic", "net"};
constexpr const char *kLinkNames[] = {"nvlink", "pci", "cpu", "net"};
constexpr const char *kPathNames[] = {"LOC", "NVL", "NVB", "PIX", "PXB",
                                      "PHB", "SYS", "NET", "DIS"};
constexpr const char *kTransportNames[] = {"P2P", "SHM", "NET"};

// The value of `Enum` whose entry in `names` (indexed by the enum) is `name`.
template <typename Enum, size_t N>
bool from_name(const char *const (&names)[N], const std::string &name, bool ignore_case,
               Enum *out) {
  for (size_t i = 0; i < N; ++i) {
    if (ignore_case ? strcasecmp(names[i], name.c_str()) == 0 : name == names[i]) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char *node_type_name(NodeType type) { return kNodeNames[static_cast<int>(type)]; }
const char *link_type_name(LinkType type) { return kLinkNames[static_cast<int>(type)]; }
const char *path_type_name(PathType type) { return kPathNames[static_cast<int>(type)]; }
const char *transport_name(Transport t) { return kTransportNames[static_cast<int>(t)]; }
bool node_type_from_name(const std::string &name, NodeType *out) {
  return from_name(kNodeNames, name, false, out);
}
bool link_type_from_name(const std::string &name, LinkType *out) {
  return from_name(kLinkNames, name, true, out);
}
bool path_type_from_name(const std::string &name, PathType *out) {
  return from_name(kPathNames, name, true, out);
}

int Topology::add_node(Node node) {
  node.links.clear();
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

void Topology::connect(int a, int b, LinkType type, double bw, double bw_back, int count,
                       int pci_gen, int pci_width) {
  auto add = [&](int from, int to, double rate) {
    nodes[from].links.push_back(static_cast<int>(links.size()));
    links.push_back({.from = from,
                     .to = to,
                     .type = type,
                     .bw = rate,
                     .count = count,
                     .pci_gen = pci_gen,
                     .pci_width = pci_width});
  };
  add(a, b, bw);
  add(b, a, bw_back < 0 ? bw : bw_back);
}

int Topology::find(NodeType type, const std::string &id) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].type == type && nodes[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Topology::of_type(NodeType type) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].type == type) out.push_back(static_cast<int>(i));
  }
  return out;
}

int Topology::link_between(int a, int b) const {
  for (int l : nodes[a].links) {
    if (links[l].to == b) return l;
  }
  return -1;
}

namespace {

// `digits` hex digits (1..max_digits) at text[*at], advancing *at; false on anything else.
bool hex_field(const std::string &text, size_t *at, size_t max_digits, unsigned *out) {
  size_t start = *at;
  unsigned value = 0;
  while (*at < text.size() && *at - start < max_digits &&
         isxdigit(static_cast<unsigned char>(text[*at]))) {
    char c = static_cast<char>(tolower(static_cast<unsigned char>(text[*at])));
    value = value * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : c - 'a' + 10);
    ++*at;
  }
  *out = value;
  return *at > start;
}

bool expect_char(const std::string &text, size_t *at, char c) {
  if (*at >= text.size() || text[*at] != c) return false;
  ++*at;
  return true;
}

}  // namespace

std::string normalize_bus_id(const std::string &text) {
  // [dddd:]bb:dd.f, hex digits only: no signs, spaces or 0x prefixes.
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  size_t at = 0;
  size_t colons = static_cast<size_t>(std::count(text.begin(), text.end(), ':'));
  if (colons == 2 && !(hex_field(text, &at, 4, &domain) && expect_char(text, &at, ':'))) return "";
  if (colons != 1 && colons != 2) return "";
  if (!(hex_field(text, &at, 2, &bus) && expect_char(text, &at, ':') &&
        hex_field(text, &at, 2, &device) && expect_char(text, &at, '.') &&
        hex_field(text, &at, 1, &function)) ||
      at != text.size() || device > 0x1f || function > 7) {
    return "";
  }
  return strprintf("%04x:%02x:%02x.%x", domain, bus, device, function);
}

void canonicalize(Topology *topo) {
  const size_t n = topo->nodes.size();
  for (const Link &link : topo->links) {
    if (link.from < 0 || link.to < 0 || static_cast<size_t>(link.from) >= n ||
        static_cast<size_t>(link.to) >= n) {
      return;  // not a model to reorder: validate() names the bad link
    }
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Node &x = topo->nodes[a];
    const Node &y = topo->nodes[b];
    if (x.type != y.type) return x.type < y.type;
    return x.id < y.id;
  });
  std::vector<int> new_index(n);
  for (size_t i = 0; i < n; ++i) new_index[order[i]] = static_cast<int>(i);
  std::vector<Node> nodes(n);
  for (size_t i = 0; i < n; ++i) {
    nodes[i] = std::move(topo->nodes[order[i]]);
    nodes[i].links.clear();
  }
  std::vector<Link> links = std::move(topo->links);
  for (Link &link : links) {
    link.from = new_index[link.from];
    link.to = new_index[link.to];
  }
  std::stable_sort(links.begin(), links.end(), [](const Link &a, const Link &b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  for (size_t l = 0; l < links.size(); ++l)
    nodes[links[l].from].links.push_back(static_cast<int>(l));
  topo->nodes = std::move(nodes);
  topo->links = std::move(links);
  for (auto &pair : topo->no_p2p) {
    if (pair.second < pair.first) std::swap(pair.first, pair.second);
  }
  std::sort(topo->no_p2p.begin(), topo->no_p2p.end());
  topo->no_p2p.erase(std::unique(topo->no_p2p.begin(), topo->no_p2p.end()), topo->no_p2p.end());
}

Status validate(const Topology &topo) {
  std::map<std::string, NodeType> ids;  // unique across types: files name nodes by id alone
  for (const Node &node : topo.nodes) {
    if (node.id.empty()) {
      return failf(COHORT_ERR_INVALID_ARG, "topology: a %s node has no id",
                   node_type_name(node.type));
    }
    auto [it, inserted] = ids.emplace(node.id, node.type);
    if (!inserted) {
      return failf(COHORT_ERR_INVALID_ARG, "topology: a %s node and a %s node have the id '%s'",
                   node_type_name(it->second), node_type_name(node.type), node.id.c_str());
    }
  }
  const int n = static_cast<int>(topo.nodes.size());
  std::set<std::pair<int, int>> seen;
  for (const Link &link : topo.links) {
    if (link.from < 0 || link.from >= n || link.to < 0 || link.to >= n || link.from == link.to) {
      return failf(COHORT_ERR_INVALID_ARG, "topology: a link joins invalid nodes %d and %d",
                   link.from, link.to);
    }
    const Node &a = topo.nodes[link.from];
    const Node &b = topo.nodes[link.to];
    if (!(link.bw > 0)) {
      return failf(COHORT_ERR_INVALID_ARG, "topology: the %s link %s %s -> %s %s has bandwidth %g",
                   link_type_name(link.type), node_type_name(a.type), a.id.c_str(),
                   node_type_name(b.type), b.id.c_str(), link.bw);
    }
    if (!seen.insert({link.from, link.to}).second) {
      return failf(COHORT_ERR_INVALID_ARG, "topology: two links from %s to %s", a.id.c_str(),
                   b.id.c_str());
    }
    if (topo.link_between(link.to, link.from) < 0) {
      return failf(COHORT_ERR_INVALID_ARG, "topology: the link %s -> %s has no reverse direction",
                   a.id.c_str(), b.id.c_str());
    }
  }
  for (int g : topo.of_type(NodeType::kGpu)) {
    bool attached = false;
    for (int l : topo.nodes[g].links) attached |= topo.links[l].type == LinkType::kPci;
    if (!attached) {
      return failf(COHORT_ERR_INVALID_ARG,
                   "topology: GPU %s has no PCI link to a switch or CPU (every GPU hangs off "
                   "the PCI tree, even when it talks over NVLink)",
                   topo.nodes[g].id.c_str());
    }
  }
  return COHORT_SUCCESS;
}

}  // namespace cohort::topo
