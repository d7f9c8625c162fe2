#include "topo/xml_io.h"

#include <fcntl.h>
#include <libxml/chvalid.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>

namespace cohort::topo::xml_io {
namespace {

// Topology and graph files are a few kilobytes (a model at every limit of the rules dumps to
// 1.4 MB); a limit keeps COHORT_TOPO_FILE=/dev/zero from hanging and bounds the memory a
// parse takes (16 MiB of empty elements took 552 MB).
constexpr size_t kMaxFileBytes = 4u << 20;

const xmlChar *xml_chars(const char *text) { return reinterpret_cast<const xmlChar *>(text); }

void init_libxml() {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
}

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

// Model strings come from the OS (host names, sysfs).  XML cannot carry invalid UTF-8 or most
// control characters, so those become '?', and a value longer than readers accept is cut,
// rather than making the dump unloadable.
std::string xml_safe(const std::string &text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxAttributeBytes));
  size_t at = 0;
  while (at < text.size()) {
    int len = static_cast<int>(std::min<size_t>(text.size() - at, 4));
    int c = xmlGetUTF8Char(xml_chars(text.data() + at), &len);
    const bool representable = c >= 0 && len > 0 && xmlIsCharQ(c);
    const size_t bytes = representable ? static_cast<size_t>(len) : 1;
    if (out.size() + bytes > kMaxAttributeBytes) break;
    if (representable) {
      out.append(text, at, bytes);
    } else {
      out += '?';
    }
    at += bytes;
  }
  return out;
}

// The depth of an element below the root (the root is 0).
int depth_of(const xmlNode *element) {
  int depth = 0;
  for (const xmlNode *up = element->parent; up != nullptr && up->type == XML_ELEMENT_NODE;
       up = up->parent) {
    ++depth;
  }
  return depth;
}

std::string line_break(int depth) {
  return "\n" + std::string(2 * static_cast<size_t>(depth), ' ');
}

// Puts the end tag of every element that has children on a line of its own.
void close_lines(xmlDoc *doc, xmlNode *element, int depth) {
  if (element->children == nullptr) return;
  for (xmlNode *child = element->children; child != nullptr; child = child->next) {
    if (child->type == XML_ELEMENT_NODE) close_lines(doc, child, depth + 1);
  }
  checked(xmlAddChild(element, checked(xmlNewDocText(doc, xml_chars(line_break(depth).c_str())))));
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
// change; our files never load a DTD or external entity, whatever they say.
void isolate_from_global_defaults(xmlParserCtxt *parser) {
  parser->replaceEntities = 0;
  parser->loadsubset = 0;
  parser->validate = 0;
  parser->options &=
      ~(XML_PARSE_NOENT | XML_PARSE_DTDLOAD | XML_PARSE_DTDATTR | XML_PARSE_DTDVALID);
}

// libxml2 reports a DOCTYPE's name before it reads the internal subset: a Reader that refuses
// DOCTYPEs stops the parse right there.
struct DoctypeStop {
  long line = 0;  // where the DOCTYPE was met; 0 none
};

void stop_at_doctype(void *context, const xmlChar *, const xmlChar *, const xmlChar *) {
  auto *parser = static_cast<xmlParserCtxt *>(context);
  auto *stop = static_cast<DoctypeStop *>(parser->_private);
  stop->line = parser->input != nullptr ? std::max(parser->input->line, 1) : 1;
  xmlStopParser(parser);
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

}  // namespace

// ------------------------------------------------------------------------------- writing

std::string format_number(double value) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof(text), value, std::chars_format::general, 6);
  return ec == std::errc() ? std::string(text, end) : std::string("0");
}

DocWriter::DocWriter(const char *root_name) {
  init_libxml();
  doc_.reset(checked(xmlNewDoc(xml_chars("1.0"))));
  root_ = checked(xmlNewDocNode(doc_.get(), nullptr, xml_chars(root_name), nullptr));
  xmlDocSetRootElement(doc_.get(), root_);
}

xmlNode *DocWriter::add(const char *name, xmlNode *parent) {
  if (parent == nullptr) parent = root_;
  const std::string indent = line_break(depth_of(parent) + 1);
  checked(xmlAddChild(parent, checked(xmlNewDocText(doc_.get(), xml_chars(indent.c_str())))));
  return checked(xmlNewChild(parent, nullptr, xml_chars(name), nullptr));
}

void DocWriter::set(xmlNode *element, const char *name, const std::string &value) {
  checked(xmlNewProp(element, xml_chars(name), xml_chars(xml_safe(value).c_str())));
}

std::string DocWriter::finish() {
  close_lines(doc_.get(), root_, 0);
  xmlChar *bytes = nullptr;
  int size = 0;
  xmlDocDumpFormatMemoryEnc(doc_.get(), &bytes, &size, "UTF-8", 0);
  XmlString owned(checked(bytes));
  return std::string(c_chars(owned.get()), static_cast<size_t>(size));
}

// ------------------------------------------------------------------------------- reading

// "x:gpu" for <x:gpu>, "gpu" for an element without a prefix.
std::string qualified_name(xmlNode *element) {
  const char *prefix =
      element->ns != nullptr && element->ns->prefix != nullptr ? c_chars(element->ns->prefix) : "";
  return std::string(prefix) + (*prefix != '\0' ? ":" : "") + c_chars(element->name);
}

bool is_named(xmlNode *element, const char *name) {
  return element->ns == nullptr && strcmp(c_chars(element->name), name) == 0;
}

std::string quoted(const std::string &value) {
  constexpr size_t kMaxShown = 48;
  if (value.size() <= kMaxShown) return "'" + value + "'";
  return "'" + value.substr(0, kMaxShown) + "...'";
}

Element::Element(xmlNode *node) : node_(node) {
  for (xmlAttr *attr = node->properties; attr != nullptr; attr = attr->next) {
    XmlString value(xmlNodeListGetString(node->doc, attr->children, 1));
    attributes_.emplace_back(c_chars(attr->name), value ? c_chars(value.get()) : "");
  }
}

const std::string *Element::get(const char *attr) const {
  for (const auto &[name, value] : attributes_) {
    if (name == attr) return &value;
  }
  return nullptr;
}

const char *Element::unknown_attribute(std::span<const char *const> allowed) const {
  for (const auto &attribute : attributes_) {
    const std::string &name = attribute.first;  // clang before 16 captures no bindings
    auto is_name = [&](const char *known) { return name == known; };
    if (std::none_of(allowed.begin(), allowed.end(), is_name)) return name.c_str();
  }
  return nullptr;
}

Status Reader::parse(const std::string &text, XmlDoc *doc) const {
  init_libxml();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return fail_at(1, "the file is empty");
  }
  if (text.size() > static_cast<size_t>(INT_MAX)) {
    return fail_at(1, strprintf("too large (%zu bytes)", text.size()));
  }
  XmlParser parser(xmlCreateMemoryParserCtxt(text.data(), static_cast<int>(text.size())));
  if (parser == nullptr) {
    return failf(COHORT_ERR_NO_MEMORY, "%s file %s: cannot create an XML parser", kind_,
                 source_.c_str());
  }
  xmlCtxtUseOptions(parser.get(), XML_PARSE_NONET | XML_PARSE_BIG_LINES);
  isolate_from_global_defaults(parser.get());
  DoctypeStop doctype;
  if (doctype_ == Doctype::kRefused) {
    parser->_private = &doctype;  // the context is the SAX callbacks' user data
    parser->sax->internalSubset = &stop_at_doctype;
  }
  ErrorCapture capture(parser.get());
  xmlParseDocument(parser.get());
  doc->reset(parser->myDoc);
  parser->myDoc = nullptr;
  if (doctype.line > 0) {
    doc->reset();
    return fail_at(doctype.line, strprintf("<!DOCTYPE>: %s files take no DTD and no entities "
                                           "(rule: no DOCTYPE)",
                                           kind_));
  }
  if (parser->wellFormed && *doc != nullptr) return COHORT_SUCCESS;
  int line = capture.line();
  std::string what = capture.message();
  if (!capture.seen()) {
    // Newer libxml2 versions may keep the error on the context only.
    const xmlError *last = xmlCtxtGetLastError(parser.get());
    line = last != nullptr ? last->line : 0;
    what = last != nullptr && last->message != nullptr ? trim_right(last->message) : "unknown";
  }
  return fail_at(std::max(line, 1), "not well-formed XML: " + what);
}

Status Reader::fail_at(long line, const std::string &what) const {
  return failf(COHORT_ERR_INVALID_ARG, "%s file %s line %ld: %s", kind_, source_.c_str(), line,
               what.c_str());
}

Status Reader::fail_attr(const Element &e, const char *attr, const std::string &problem) const {
  const std::string *value = e.get(attr);
  return fail_at(e.line(),
                 strprintf("%s %s=%s: %s", e.name(), attr,
                           value != nullptr ? quoted(*value).c_str() : "''", problem.c_str()));
}

Status Reader::fail_file(const std::string &what) const {
  return failf(COHORT_ERR_INVALID_ARG, "%s file %s: %s", kind_, source_.c_str(), what.c_str());
}

Status Reader::fail_unknown_element(xmlNode *element) const {
  return fail_at(line_of(element),
                 strprintf("unknown element <%s>", qualified_name(element).c_str()));
}

Status Reader::check_root(xmlNode *root, const char *root_name,
                          std::span<const char *const> allowed, int version) const {
  if (root == nullptr) return fail_at(1, "no root element");
  Element e(root);
  if (root->ns != nullptr && strcmp(e.name(), root_name) == 0) {
    const char *uri = root->ns->href != nullptr ? c_chars(root->ns->href) : "";
    return fail_at(e.line(), strprintf("root element <%s> is in namespace '%s'; Cohort %s files "
                                       "use no namespace",
                                       root_name, uri, kind_));
  }
  if (root->ns != nullptr || strcmp(e.name(), root_name) != 0) {
    return fail_at(e.line(), strprintf("root element is <%s>, expected <%s>",
                                       qualified_name(root).c_str(), root_name));
  }
  if (Status s = check_attributes(e, allowed); is_error(s)) return s;
  std::string text;
  if (Status s = require(e, "version", &text); is_error(s)) return s;
  long long number = 0;
  if (!parse_int(text, &number) || number != version) {
    return fail_attr(e, "version",
                     strprintf("unsupported version (this build reads version %d)", version));
  }
  return COHORT_SUCCESS;
}

Status Reader::check_attributes(const Element &e, std::span<const char *const> allowed) const {
  const char *unknown = e.unknown_attribute(allowed);
  if (unknown == nullptr) return check_lengths(e, allowed);
  std::string names;
  for (const char *name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
  return fail_at(e.line(), strprintf("%s: unknown attribute '%s' (allowed: %s)", e.name(), unknown,
                                     names.c_str()));
}

Status Reader::check_lengths(const Element &e, std::span<const char *const> names) const {
  for (const char *name : names) {
    const std::string *value = e.get(name);
    if (value == nullptr || value->size() <= kMaxAttributeBytes) continue;
    return fail_attr(e, name,
                     strprintf("%zu bytes, more than the %zu an attribute may hold "
                               "(rule: attribute length)",
                               value->size(), kMaxAttributeBytes));
  }
  return COHORT_SUCCESS;
}

Status Reader::check_text(xmlNode *child) const {
  const bool is_text = child->type == XML_TEXT_NODE || child->type == XML_CDATA_SECTION_NODE;
  if (is_text && xmlIsBlankNode(child)) return COHORT_SUCCESS;
  if (is_text || child->type == XML_ENTITY_REF_NODE) {
    return fail_at(text_line(child),
                   strprintf("unexpected text in <%s>", c_chars(child->parent->name)));
  }
  return COHORT_SUCCESS;
}

Status Reader::check_leaf(xmlNode *element) const {
  return for_each_element(element, [&](xmlNode *child) {
    return fail_at(line_of(child), strprintf("<%s> inside <%s>: it takes no content",
                                             c_chars(child->name), c_chars(element->name)));
  });
}

Status Reader::require(const Element &e, const char *attr, std::string *out) const {
  const std::string *value = e.get(attr);
  if (value == nullptr) {
    return fail_at(e.line(), strprintf("%s: missing attribute '%s'", e.name(), attr));
  }
  *out = *value;
  return COHORT_SUCCESS;
}

Status Reader::read_int(const Element &e, const char *attr, long long lo, long long hi,
                        long long *out) const {
  const std::string *text = e.get(attr);
  if (text == nullptr) return COHORT_SUCCESS;
  long long value = 0;
  if (!parse_int(*text, &value)) return fail_attr(e, attr, "not an integer");
  if (value < lo || value > hi) {
    return fail_attr(e, attr, strprintf("out of range %lld..%lld", lo, hi));
  }
  *out = value;
  return COHORT_SUCCESS;
}

Status Reader::read_int(const Element &e, const char *attr, int lo, int hi, int *out) const {
  long long value = *out;
  if (Status s = read_int(e, attr, static_cast<long long>(lo), hi, &value); is_error(s)) return s;
  *out = static_cast<int>(value);
  return COHORT_SUCCESS;
}

Status Reader::read_number(const Element &e, const char *attr, bool zero_allowed,
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

// --------------------------------------------------------------------------------- files

Status read_text_file(const char *kind, const std::string &path, std::string *out) {
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return failf(COHORT_ERR_INVALID_ARG, "%s file %s: cannot open: %s", kind, path.c_str(),
                 strerror(errno));
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return failf(COHORT_ERR_INVALID_ARG, "%s file %s: cannot read: %s", kind, path.c_str(),
                   strerror(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxFileBytes) {
      return failf(COHORT_ERR_INVALID_ARG, "%s file %s: larger than %zu MiB, not a %s", kind,
                   path.c_str(), kMaxFileBytes >> 20, kind);
    }
  }
  *out = std::move(text);
  return COHORT_SUCCESS;
}

Status write_text_file(const char *kind, const std::string &path, const std::string &text) {
  FileDescriptor fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return failf(COHORT_ERR_SYSTEM, "%s dump %s: cannot open: %s", kind, path.c_str(),
                 strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return failf(COHORT_ERR_SYSTEM, "%s dump %s: cannot write: %s", kind, path.c_str(),
                   strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (fd.release_and_close() != 0) {
    return failf(COHORT_ERR_SYSTEM, "%s dump %s: cannot close: %s", kind, path.c_str(),
                 strerror(errno));
  }
  return COHORT_SUCCESS;
}

}  // namespace cohort::topo::xml_io
