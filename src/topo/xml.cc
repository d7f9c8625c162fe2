#include "topo/xml.h"

#include <fcntl.h>
#include <libxml/chvalid.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "topo/bandwidth.h"

namespace cohort::topo {
namespace {

constexpr const char *kRootName = "cohort_topology";
constexpr int kFormatVersion = 1;
// Topology files are a few kilobytes; a limit keeps COHORT_TOPO_FILE=/dev/zero from hanging.
constexpr size_t kMaxFileBytes = 16u << 20;

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

const xmlChar *xml_chars(const char *text) { return reinterpret_cast<const xmlChar *>(text); }
const char *c_chars(const xmlChar *text) { return reinterpret_cast<const char *>(text); }

// Lines count from 1; libxml2 answers 0 or -1 when it does not know.
long line_of(xmlNode *node) { return std::max(xmlGetLineNo(node), 1L); }

void init_libxml() {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
}

struct DocFree {
  void operator()(xmlDoc *doc) const { xmlFreeDoc(doc); }
};
using XmlDoc = std::unique_ptr<xmlDoc, DocFree>;
struct ParserFree {
  void operator()(xmlParserCtxt *parser) const { xmlFreeParserCtxt(parser); }
};
using XmlParser = std::unique_ptr<xmlParserCtxt, ParserFree>;
struct XmlFree {
  void operator()(xmlChar *text) const { xmlFree(text); }
};
using XmlString = std::unique_ptr<xmlChar, XmlFree>;

// libxml2 returns null only when out of memory; the C API turns bad_alloc into NO_MEMORY.
template <typename T>
T *checked(T *pointer) {
  if (pointer == nullptr) throw std::bad_alloc();
  return pointer;
}

// ------------------------------------------------------------------------------- writing

// "%g" in the C locale whatever the process's LC_NUMERIC, so a dump reads back anywhere.
std::string format_number(double value) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof(text), value, std::chars_format::general, 6);
  return ec == std::errc() ? std::string(text, end) : std::string("0");
}

// Model strings come from the OS (host names, sysfs).  XML cannot carry invalid UTF-8 or most
// control characters, so those become '?' rather than making the dump unloadable.
std::string xml_safe(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    int len = static_cast<int>(std::min<size_t>(text.size() - at, 4));
    int c = xmlGetUTF8Char(xml_chars(text.data() + at), &len);
    if (c < 0 || len <= 0 || !xmlIsCharQ(c)) {
      out += '?';
      ++at;
      continue;
    }
    out.append(text, at, static_cast<size_t>(len));
    at += static_cast<size_t>(len);
  }
  return out;
}

// Builds the document.  Indentation is written as text nodes rather than by libxml2's
// formatter, whose indent string is a thread-global setting the application could change.
class DocWriter {
 public:
  DocWriter() : doc_(checked(xmlNewDoc(xml_chars("1.0")))) {
    root_ = checked(xmlNewDocNode(doc_.get(), nullptr, xml_chars(kRootName), nullptr));
    xmlDocSetRootElement(doc_.get(), root_);
  }

  xmlNode *root() const { return root_; }

  xmlNode *add(const char *name) {
    checked(xmlAddChild(root_, checked(xmlNewDocText(doc_.get(), xml_chars("\n  ")))));
    return checked(xmlNewChild(root_, nullptr, xml_chars(name), nullptr));
  }

  static void set(xmlNode *element, const char *name, const std::string &value) {
    checked(xmlNewProp(element, xml_chars(name), xml_chars(xml_safe(value).c_str())));
  }

  std::string finish() {
    if (root_->children != nullptr) {
      checked(xmlAddChild(root_, checked(xmlNewDocText(doc_.get(), xml_chars("\n")))));
    }
    xmlChar *bytes = nullptr;
    int size = 0;
    xmlDocDumpFormatMemoryEnc(doc_.get(), &bytes, &size, "UTF-8", 0);
    XmlString owned(checked(bytes));
    return std::string(c_chars(owned.get()), static_cast<size_t>(size));
  }

 private:
  XmlDoc doc_;
  xmlNode *root_ = nullptr;
};

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

// Renders an attribute value for a message, cut short when a file holds something huge.
std::string quoted(const std::string &value) {
  constexpr size_t kMaxShown = 48;
  if (value.size() <= kMaxShown) return "'" + value + "'";
  return "'" + value.substr(0, kMaxShown) + "...'";
}

// Locale-independent and strict: the whole value must be the number, nothing around it.
bool parse_int(const std::string &text, long long *out) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool parse_double(const std::string &text, double *out) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out, std::chars_format::general);
  return ec == std::errc() && ptr == end && !text.empty() && std::isfinite(*out);
}

std::string trim_right(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

#if LIBXML_VERSION >= 21200
using XmlErrorArg = const xmlError *;
#else
using XmlErrorArg = xmlError *;
#endif

// For the duration of one parse, takes this thread's libxml2 diagnostics (which it would
// otherwise print to stderr) and keeps the first of the most severe level for the message.
class ErrorCapture {
 public:
  explicit ErrorCapture(const xmlParserCtxt *parser)
      : parser_(parser),
        saved_structured_(xmlStructuredError),
        saved_structured_context_(xmlStructuredErrorContext),
        saved_generic_(xmlGenericError),
        saved_generic_context_(xmlGenericErrorContext) {
    xmlSetStructuredErrorFunc(this, &ErrorCapture::on_error);
    xmlSetGenericErrorFunc(this, &ErrorCapture::on_generic);
  }
  ~ErrorCapture() {
    xmlSetStructuredErrorFunc(saved_structured_context_, saved_structured_);
    xmlSetGenericErrorFunc(saved_generic_context_, saved_generic_);
    // The thread's last-error record would otherwise still hold this parse's error.
    if (level_ != XML_ERR_NONE) xmlResetLastError();
  }
  ErrorCapture(const ErrorCapture &) = delete;
  ErrorCapture &operator=(const ErrorCapture &) = delete;

  bool seen() const { return level_ != XML_ERR_NONE; }
  int line() const { return line_; }
  const std::string &message() const { return message_; }

 private:
  static void on_error(void *context, XmlErrorArg error) {
    auto *self = static_cast<ErrorCapture *>(context);
    if (error == nullptr || error->level <= self->level_) return;
    self->level_ = error->level;
    self->message_ = trim_right(error->message != nullptr ? error->message : "unknown error");
    self->line_ = error->line;
    // Encoding errors come without a position; the parser knows where it stopped.
    if (self->line_ <= 0 && self->parser_->input != nullptr)
      self->line_ = self->parser_->input->line;
  }
  // A few libxml2 paths print through the generic handler without a structured error.
  static void on_generic(void *, const char *, ...) {}

  const xmlParserCtxt *parser_;
  xmlStructuredErrorFunc saved_structured_;
  void *saved_structured_context_;
  xmlGenericErrorFunc saved_generic_;
  void *saved_generic_context_;
  xmlErrorLevel level_ = XML_ERR_NONE;
  int line_ = 0;
  std::string message_;
};

// A parser context starts from libxml2's process-wide defaults, which an application can
// change; a topology file never loads a DTD or external entity, whatever they say.
void isolate_from_global_defaults(xmlParserCtxt *parser) {
  parser->replaceEntities = 0;
  parser->loadsubset = 0;
  parser->validate = 0;
  parser->options &=
      ~(XML_PARSE_NOENT | XML_PARSE_DTDLOAD | XML_PARSE_DTDATTR | XML_PARSE_DTDVALID);
}

Status parse_document(const std::string &text, const std::string &source, XmlDoc *doc) {
  XmlParser parser(xmlCreateMemoryParserCtxt(text.data(), static_cast<int>(text.size())));
  if (parser == nullptr) {
    return failf(COHORT_ERR_NO_MEMORY, "topology file %s: cannot create an XML parser",
                 source.c_str());
  }
  xmlCtxtUseOptions(parser.get(), XML_PARSE_NONET | XML_PARSE_BIG_LINES);
  isolate_from_global_defaults(parser.get());
  ErrorCapture capture(parser.get());
  xmlParseDocument(parser.get());
  doc->reset(parser->myDoc);
  parser->myDoc = nullptr;
  if (parser->wellFormed && *doc != nullptr) return COHORT_SUCCESS;
  int line = capture.line();
  std::string what = capture.message();
  if (!capture.seen()) {
    // Newer libxml2 versions may keep the error on the context only.
    const xmlError *last = xmlCtxtGetLastError(parser.get());
    line = last != nullptr ? last->line : 0;
    what = last != nullptr && last->message != nullptr ? trim_right(last->message) : "unknown";
  }
  return failf(COHORT_ERR_INVALID_ARG, "topology file %s line %d: not well-formed XML: %s",
               source.c_str(), std::max(line, 1), what.c_str());
}

// One element and its attributes, read once, so that an unexpected attribute can be named.
class Element {
 public:
  explicit Element(xmlNode *node) : node_(node) {
    for (xmlAttr *attr = node->properties; attr != nullptr; attr = attr->next) {
      XmlString value(xmlNodeListGetString(node->doc, attr->children, 1));
      attributes_.emplace_back(c_chars(attr->name), value ? c_chars(value.get()) : "");
    }
  }

  const char *name() const { return c_chars(node_->name); }
  long line() const { return line_of(node_); }

  const std::string *get(const char *attr) const {
    for (const auto &[name, value] : attributes_) {
      if (name == attr) return &value;
    }
    return nullptr;
  }

  // The first attribute not in `allowed`, or null.
  const char *unknown_attribute(std::span<const char *const> allowed) const {
    for (const auto &[name, value] : attributes_) {
      auto is_name = [&](const char *known) { return name == known; };
      if (std::none_of(allowed.begin(), allowed.end(), is_name)) return name.c_str();
    }
    return nullptr;
  }

 private:
  xmlNode *node_;
  std::vector<std::pair<std::string, std::string>> attributes_;
};

// Reads a parsed document into a Topology, naming the file and line in every error.
class Loader {
 public:
  explicit Loader(const std::string &source) : source_(source) {}
  Status load(xmlNode *root, Topology *out);

 private:
  Status fail_at(long line, const std::string &what) const;
  Status fail_attr(const Element &e, const char *attr, const std::string &problem) const;
  Status check_attributes(const Element &e, std::span<const char *const> allowed) const;
  Status check_leaf(xmlNode *element) const;
  Status check_text(xmlNode *child) const;
  Status require(const Element &e, const char *attr, std::string *out) const;
  Status read_int(const Element &e, const char *attr, int lo, int hi, int *out) const;
  Status read_number(const Element &e, const char *attr, bool zero_allowed, double *out) const;

  Status read_root(xmlNode *root);
  Status read_nodes(xmlNode *root);
  Status read_node(xmlNode *element, NodeType type);
  Status read_node_id(const Element &e, NodeType type, std::string *id) const;
  Status read_node_details(const Element &e, Node *node) const;
  Status read_relations(xmlNode *root);
  Status read_link(xmlNode *element);
  Status read_link_numbers(const Element &e, LinkType type, Link *link, double *bw_back) const;
  Status resolve(const Element &e, const char *attr, int *index) const;
  Status read_no_p2p(xmlNode *element);
  Status read_assumed(xmlNode *element);
  double table_bw(LinkType type, int a, int b, int count, int gen, int width) const;
  const Node *end_of_type(int a, int b, NodeType type) const;
  Status finish(Topology *out);

  const std::string &source_;
  Topology topo_;
  std::map<std::pair<NodeType, std::string>, long> node_lines_;
  std::multimap<std::string, int> nodes_by_id_;
  std::map<std::pair<int, int>, long> link_lines_;
};

Status Loader::fail_at(long line, const std::string &what) const {
  return failf(COHORT_ERR_INVALID_ARG, "topology file %s line %ld: %s", source_.c_str(), line,
               what.c_str());
}

Status Loader::fail_attr(const Element &e, const char *attr, const std::string &problem) const {
  const std::string *value = e.get(attr);
  return fail_at(e.line(),
                 strprintf("%s %s=%s: %s", e.name(), attr,
                           value != nullptr ? quoted(*value).c_str() : "''", problem.c_str()));
}

Status Loader::check_attributes(const Element &e, std::span<const char *const> allowed) const {
  const char *unknown = e.unknown_attribute(allowed);
  if (unknown == nullptr) return COHORT_SUCCESS;
  std::string names;
  for (const char *name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
  return fail_at(e.line(), strprintf("%s: unknown attribute '%s' (allowed: %s)", e.name(), unknown,
                                     names.c_str()));
}

// libxml2 records the line where a text node ends; the line to report is that of its first
// non-blank character.  Other nodes (CDATA, entity references) take the line where the text
// before them ends, which is where they start.
long text_line(xmlNode *node) {
  const long line = line_of(node);
  if (node->type != XML_TEXT_NODE || node->content == nullptr) return line;
  const std::string content = c_chars(node->content);
  const size_t first = content.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return line;
  return std::max(line - std::count(content.begin() + first, content.end(), '\n'), 1L);
}

// Whitespace and comments are all a file may hold outside elements.
Status Loader::check_text(xmlNode *child) const {
  const bool is_text = child->type == XML_TEXT_NODE || child->type == XML_CDATA_SECTION_NODE;
  if (is_text && xmlIsBlankNode(child)) return COHORT_SUCCESS;
  if (is_text || child->type == XML_ENTITY_REF_NODE) {
    return fail_at(text_line(child),
                   strprintf("unexpected text in <%s>", c_chars(child->parent->name)));
  }
  return COHORT_SUCCESS;
}

Status Loader::check_leaf(xmlNode *element) const {
  for (xmlNode *child = element->children; child != nullptr; child = child->next) {
    if (child->type == XML_ELEMENT_NODE) {
      return fail_at(line_of(child), strprintf("<%s> inside <%s>: it takes no content",
                                               c_chars(child->name), c_chars(element->name)));
    }
    if (Status s = check_text(child); is_error(s)) return s;
  }
  return COHORT_SUCCESS;
}

Status Loader::require(const Element &e, const char *attr, std::string *out) const {
  const std::string *value = e.get(attr);
  if (value == nullptr) {
    return fail_at(e.line(), strprintf("%s: missing attribute '%s'", e.name(), attr));
  }
  *out = *value;
  return COHORT_SUCCESS;
}

// Leaves *out alone when the attribute is absent.
Status Loader::read_int(const Element &e, const char *attr, int lo, int hi, int *out) const {
  const std::string *text = e.get(attr);
  if (text == nullptr) return COHORT_SUCCESS;
  long long value = 0;
  if (!parse_int(*text, &value)) return fail_attr(e, attr, "not an integer");
  if (value < lo || value > hi) return fail_attr(e, attr, strprintf("out of range %d..%d", lo, hi));
  *out = static_cast<int>(value);
  return COHORT_SUCCESS;
}

// Bandwidths must be positive, speeds may be 0 (unknown).  Leaves *out alone when absent.
Status Loader::read_number(const Element &e, const char *attr, bool zero_allowed,
                           double *out) const {
  const std::string *text = e.get(attr);
  if (text == nullptr) return COHORT_SUCCESS;
  double value = 0;
  if (!parse_double(*text, &value)) return fail_attr(e, attr, "not a number");
  if (value < 0 || (value == 0 && !zero_allowed)) {
    return fail_attr(e, attr,
                     zero_allowed ? "out of range: must be >= 0" : "out of range: must be > 0");
  }
  *out = value;
  return COHORT_SUCCESS;
}

Status Loader::load(xmlNode *root, Topology *out) {
  if (Status s = read_root(root); is_error(s)) return s;
  if (Status s = read_nodes(root); is_error(s)) return s;
  if (Status s = read_relations(root); is_error(s)) return s;
  return finish(out);
}

Status Loader::read_root(xmlNode *root) {
  if (root == nullptr) return fail_at(1, "no root element");
  Element e(root);
  if (root->ns != nullptr || strcmp(e.name(), kRootName) != 0) {
    return fail_at(e.line(), strprintf("root element is <%s>, expected <%s>", e.name(), kRootName));
  }
  if (Status s = check_attributes(e, kRootAttributes); is_error(s)) return s;
  std::string version;
  if (Status s = require(e, "version", &version); is_error(s)) return s;
  long long number = 0;
  if (!parse_int(version, &number) || number != kFormatVersion) {
    return fail_attr(
        e, "version",
        strprintf("unsupported version (this build reads version %d)", kFormatVersion));
  }
  if (const std::string *host = e.get("host")) topo_.host = *host;
  return COHORT_SUCCESS;
}

bool node_type_of_element(const char *name, NodeType *type) {
  for (int t = 0; t < static_cast<int>(NodeType::kCount); ++t) {
    if (strcmp(name, node_type_name(static_cast<NodeType>(t))) == 0) {
      *type = static_cast<NodeType>(t);
      return true;
    }
  }
  return false;
}

bool is_relation_element(const char *name) {
  return strcmp(name, "link") == 0 || strcmp(name, "no_p2p") == 0 || strcmp(name, "assumed") == 0;
}

// First pass: the nodes, so that links may name nodes written after them.
Status Loader::read_nodes(xmlNode *root) {
  for (xmlNode *child = root->children; child != nullptr; child = child->next) {
    if (child->type != XML_ELEMENT_NODE) {
      if (Status s = check_text(child); is_error(s)) return s;
      continue;
    }
    const char *name = c_chars(child->name);
    NodeType type;
    if (child->ns == nullptr && node_type_of_element(name, &type)) {
      if (Status s = read_node(child, type); is_error(s)) return s;
    } else if (child->ns != nullptr || !is_relation_element(name)) {
      const char *prefix =
          child->ns != nullptr && child->ns->prefix != nullptr ? c_chars(child->ns->prefix) : "";
      return fail_at(line_of(child), strprintf("unknown element <%s%s%s>", prefix,
                                               *prefix != '\0' ? ":" : "", name));
    }
  }
  return COHORT_SUCCESS;
}

Status Loader::read_node(xmlNode *element, NodeType type) {
  Element e(element);
  if (Status s = check_attributes(e, node_attributes(type)); is_error(s)) return s;
  if (Status s = check_leaf(element); is_error(s)) return s;
  Node node;
  node.type = type;
  if (Status s = read_node_id(e, type, &node.id); is_error(s)) return s;
  if (Status s = read_node_details(e, &node); is_error(s)) return s;
  auto [first, inserted] = node_lines_.emplace(std::make_pair(type, node.id), e.line());
  if (!inserted) {
    return fail_attr(e, "id",
                     strprintf("duplicate %s id (first on line %ld)", e.name(), first->second));
  }
  const std::string id = node.id;
  nodes_by_id_.emplace(id, topo_.add_node(std::move(node)));
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
    case NodeType::kNet:
      text("name", &node->name);
      return read_number(e, "speed", true, &node->speed_gbps);
    default: return COHORT_SUCCESS;
  }
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
  if (Status s = read_number(e, "bw", false, &link->bw); is_error(s)) return s;
  return read_number(e, "bw_back", false, bw_back);
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
    if (topo_.find(NodeType::kGpu, ids[i]) < 0)
      return fail_attr(e, attrs[i], "no gpu with this id");
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

Status Loader::finish(Topology *out) {
  if (Status s = validate(topo_); is_error(s)) {
    std::string what = last_error();
    constexpr std::string_view kPrefix = "topology: ";
    if (what.starts_with(kPrefix)) what.erase(0, kPrefix.size());
    return failf(COHORT_ERR_INVALID_ARG, "topology file %s: %s", source_.c_str(), what.c_str());
  }
  canonicalize(&topo_);
  *out = std::move(topo_);
  return COHORT_SUCCESS;
}

// Closes a file descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return fd_; }
  // Closes now, for the caller to see the error (a full disk may show only here).
  int release_and_close() {
    int fd = fd_;
    fd_ = -1;
    return close(fd);
  }

 private:
  int fd_;
};

Status read_file(const std::string &path, std::string *out) {
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return failf(COHORT_ERR_INVALID_ARG, "topology file %s: cannot open: %s", path.c_str(),
                 strerror(errno));
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return failf(COHORT_ERR_INVALID_ARG, "topology file %s: cannot read: %s", path.c_str(),
                   strerror(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxFileBytes) {
      return failf(COHORT_ERR_INVALID_ARG, "topology file %s: larger than %zu MiB, not a topology",
                   path.c_str(), kMaxFileBytes >> 20);
    }
  }
  *out = std::move(text);
  return COHORT_SUCCESS;
}

}  // namespace

std::string to_xml(const Topology &topo) {
  init_libxml();
  Topology canonical = topo;
  canonicalize(&canonical);
  DocWriter writer;
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
  const std::string text = to_xml(topo);
  FileDescriptor fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return failf(COHORT_ERR_SYSTEM, "topology dump %s: cannot open: %s", path.c_str(),
                 strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return failf(COHORT_ERR_SYSTEM, "topology dump %s: cannot write: %s", path.c_str(),
                   strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (fd.release_and_close() != 0) {
    return failf(COHORT_ERR_SYSTEM, "topology dump %s: cannot close: %s", path.c_str(),
                 strerror(errno));
  }
  return COHORT_SUCCESS;
}

Status from_xml(const std::string &text, const std::string &source, Topology *out) {
  init_libxml();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return failf(COHORT_ERR_INVALID_ARG, "topology file %s line 1: the file is empty",
                 source.c_str());
  }
  if (text.size() > static_cast<size_t>(INT_MAX)) {
    return failf(COHORT_ERR_INVALID_ARG, "topology file %s line 1: too large (%zu bytes)",
                 source.c_str(), text.size());
  }
  XmlDoc doc;
  if (Status s = parse_document(text, source, &doc); is_error(s)) return s;
  return Loader(source).load(xmlDocGetRootElement(doc.get()), out);
}

Status read_xml_file(const std::string &path, Topology *out) {
  std::string text;
  if (Status s = read_file(path, &text); is_error(s)) return s;
  return from_xml(text, path, out);
}

}  // namespace cohort::topo
