// The libxml2 machinery that the topology (xml.h) and graph (graph_xml.h) files share: a
// document writer with fixed indentation, a parser isolated from libxml2's process-wide
// settings that captures its errors instead of printing them, and checks on elements and
// attributes whose errors name the file and line ("graph file g.xml line 4: ...").
// Numbers are written and read in the C locale, whatever the process's LC_NUMERIC.
#pragma once

#include <libxml/tree.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cohort::topo::xml_io {

inline const char *c_chars(const xmlChar *text) { return reinterpret_cast<const char *>(text); }

// `element` is <name>, in no namespace.
bool is_named(xmlNode *element, const char *name);
// The element's name as written, with its namespace prefix ("x:gpu").
std::string qualified_name(xmlNode *element);

// Lines count from 1; libxml2 answers 0 or -1 when it does not know.
inline long line_of(xmlNode *node) { return std::max(xmlGetLineNo(node), 1L); }

struct DocFree {
  void operator()(xmlDoc *doc) const { xmlFreeDoc(doc); }
};
using XmlDoc = std::unique_ptr<xmlDoc, DocFree>;

// "%g" (six significant digits) in the C locale, so a dump reads back anywhere.
std::string format_number(double value);

// Renders an attribute value for a message, cut short when a file holds something huge.
std::string quoted(const std::string &value);

// The longest attribute value a file may hold.  Real values are ids, numbers, host names
// (<= 255 bytes) and assumption texts of a few hundred bytes; the writer cuts longer model
// strings to this, so that every dump loads again.
constexpr size_t kMaxAttributeBytes = 4096;

// Builds a document under the root element `root_name`.  Indentation is written as text nodes
// rather than by libxml2's formatter, whose indent string is a thread-global setting the
// application could change.  Throws std::bad_alloc when libxml2 runs out of memory.
class DocWriter {
 public:
  explicit DocWriter(const char *root_name);

  xmlNode *root() const { return root_; }
  // A new last child of `parent` (the root when null), on a line of its own.
  xmlNode *add(const char *name, xmlNode *parent = nullptr);
  // Strings XML cannot carry (invalid UTF-8, most control characters) are written as '?';
  // values longer than kMaxAttributeBytes are cut there, at a character boundary.
  static void set(xmlNode *element, const char *name, const std::string &value);
  // The document's text, UTF-8, one element per line.
  std::string finish();

 private:
  XmlDoc doc_;
  xmlNode *root_ = nullptr;
};

// One element and its attributes, read once, so that an unexpected attribute can be named.
class Element {
 public:
  explicit Element(xmlNode *node);

  const char *name() const { return c_chars(node_->name); }
  long line() const { return line_of(node_); }
  const std::string *get(const char *attr) const;  // null when absent
  // The first attribute not in `allowed`, or null.
  const char *unknown_attribute(std::span<const char *const> allowed) const;

 private:
  xmlNode *node_;
  std::vector<std::pair<std::string, std::string>> attributes_;
};

// What parse() does with a DOCTYPE.  Parsed: its declarations are read, but no DTD or external
// entity is loaded and no entity substituted.  Refused: an error before libxml2 reads any of
// it, so no entity can cost anything (an internal one named 2000 times expands quadratically).
enum class Doctype { kParsed, kRefused };

// Parses and checks one file.  Every error is COHORT_ERR_INVALID_ARG and reads
// "<kind> file <source> line N: <what>" ("topology file f.xml line 12: ...").
class Reader {
 public:
  Reader(const char *kind, std::string source, Doctype doctype = Doctype::kParsed)
      : kind_(kind), source_(std::move(source)), doctype_(doctype) {}

  // Never crashes on any input and touches no network.
  Status parse(const std::string &text, XmlDoc *doc) const;

  Status fail_at(long line, const std::string &what) const;
  // "<element> <attr>='<value>': <problem>" at the element's line.
  Status fail_attr(const Element &e, const char *attr, const std::string &problem) const;
  // An error about the whole file, with no line.
  Status fail_file(const std::string &what) const;
  Status fail_unknown_element(xmlNode *element) const;

  // The root is <root_name> with only `allowed` attributes and version="`version`".
  Status check_root(xmlNode *root, const char *root_name, std::span<const char *const> allowed,
                    int version) const;
  // Only `allowed` attributes, none longer than kMaxAttributeBytes.
  Status check_attributes(const Element &e, std::span<const char *const> allowed) const;
  // No child elements and no text: whitespace and comments only.
  Status check_leaf(xmlNode *element) const;
  // Whitespace and comments are all a file may hold outside elements.
  Status check_text(xmlNode *child) const;
  // Calls `visit` (Status(xmlNode *)) on each child element of `parent` in order, checking
  // what stands between them with check_text; the first error ends the walk.
  template <typename Visit>
  Status for_each_element(xmlNode *parent, Visit visit) const {
    for (xmlNode *child = parent->children; child != nullptr; child = child->next) {
      const Status s = child->type == XML_ELEMENT_NODE ? visit(child) : check_text(child);
      if (is_error(s)) return s;
    }
    return COHORT_SUCCESS;
  }

  Status require(const Element &e, const char *attr, std::string *out) const;
  // Strict, locale-independent numbers within bounds.  Leave *out alone when absent.
  Status read_int(const Element &e, const char *attr, long long lo, long long hi,
                  long long *out) const;
  Status read_int(const Element &e, const char *attr, int lo, int hi, int *out) const;
  // Bandwidths must be positive (zero_allowed false), speeds may be 0 (unknown).
  Status read_number(const Element &e, const char *attr, bool zero_allowed, double *out) const;

  const std::string &source() const { return source_; }

 private:
  Status check_lengths(const Element &e, std::span<const char *const> names) const;

  const char *kind_;  // "topology", "graph"
  std::string source_;
  Doctype doctype_;
};

// Reads a whole file (at most 4 MiB: COHORT_..._FILE=/dev/zero must not hang).  Errors are
// COHORT_ERR_INVALID_ARG: "<kind> file <path>: cannot open: <reason>".
Status read_text_file(const char *kind, const std::string &path, std::string *out);
// Creates or replaces `path`.  Errors are COHORT_ERR_SYSTEM: "<kind> dump <path>: ...".
Status write_text_file(const char *kind, const std::string &path, const std::string &text);

}  // namespace cohort::topo::xml_io
