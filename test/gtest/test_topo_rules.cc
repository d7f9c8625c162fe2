// Topology files are input: the limits and rules of src/topo/rules.h and the parser's refusals
// (DOCTYPE, attribute length, namespaced root).  Every refusal names the file, the line and the
// rule; files too large are refused fast, before any work grows with them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "topo/rules.h"
#include "topo/xml.h"
#include "topo/xml_io.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

// Loads `text` as "f.xml" and expects it refused with "topology file f.xml line N: " and
// every one of `words` in the message.
void expect_refused(const std::string &text, int line, const std::vector<std::string> &words) {
  Topology topo;
  ASSERT_EQ(from_xml(text, "f.xml", &topo), COHORT_ERR_INVALID_ARG) << text.substr(0, 400);
  const std::string &message = last_error();
  const std::string prefix = "topology file f.xml line " + std::to_string(line) + ": ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
  for (const std::string &word : words) {
    EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
  }
  EXPECT_TRUE(topo.nodes.empty());
}

void expect_loads(const std::string &text) {
  Topology topo;
  EXPECT_EQ(from_xml(text, "f.xml", &topo), COHORT_SUCCESS) << last_error();
}

// A CPU (line 2) and a GPU under it (lines 3-4), with `extra` on line 5.
std::string with_line_5(const std::string &extra) {
  return "<cohort_topology version=\"1\">\n"
         "<cpu id=\"cpu0\" numa=\"0\" vendor=\"intel\"/>\n"
         "<gpu id=\"0000:17:00.0\" sm=\"90\" uuid=\"00112233445566778899aabbccddeeff\"/>\n"
         "<link a=\"cpu0\" b=\"0000:17:00.0\" type=\"pci\"/>\n" +
         extra + "\n</cohort_topology>\n";
}

// `count` nodes of one kind, the k-th on line k + 1, with distinct ids (and NUMA nodes).
std::string many_nodes_xml(NodeType type, int count) {
  std::string text = "<cohort_topology version=\"1\">\n";
  for (int k = 0; k < count; ++k) {
    const std::string name = node_type_name(type);
    std::string id = nth_bus_id(k + 1);
    if (type == NodeType::kCpu) id = "cpu" + std::to_string(k) + "\" numa=\"" + std::to_string(k);
    if (type == NodeType::kNet || type == NodeType::kNvSwitch) id = name + std::to_string(k);
    text += "<" + name + " id=\"" + id + "\"/>\n";
  }
  return text + "</cohort_topology>\n";
}

// ----------------------------------------------------------------------------- limits

struct KindCase {
  NodeType type;
  int max;
  const char *rule;
};

TEST(TopoRulesLimits, EachKindStopsAtItsLimitNamingTheLine) {
  const KindCase cases[] = {
      {NodeType::kGpu, 256, "(rule: at most 256 GPUs per host)"},
      {NodeType::kNvSwitch, 1, "(rule: at most 1 NVSwitch fabric per host)"},
      {NodeType::kCpu, 64, "(rule: at most 64 CPUs per host)"},
      {NodeType::kNic, 256, "(rule: at most 256 NICs per host)"},
      {NodeType::kNet, 256, "(rule: at most 256 network ports per host)"},
  };
  for (const KindCase &c : cases) {
    SCOPED_TRACE(node_type_name(c.type));
    EXPECT_EQ(rules::max_nodes_of(c.type), c.max);
    if (c.type != NodeType::kGpu) expect_loads(many_nodes_xml(c.type, c.max));  // GPUs need a CPU
    const std::string element = std::string("<") + node_type_name(c.type) + ">: one too many";
    expect_refused(many_nodes_xml(c.type, c.max + 1), c.max + 2, {element, c.rule});
  }
}

TEST(TopoRulesLimits, NodesPerHost) {
  expect_loads(many_nodes_xml(NodeType::kPci, rules::kMaxNodes));
  expect_refused(many_nodes_xml(NodeType::kPci, rules::kMaxNodes + 1), rules::kMaxNodes + 2,
                 {"<pci>: one node too many (rule: at most 4096 nodes per host)"});
}

// 182 GPUs joined all to all by NVLink: 16471 links, more than 16384.
TEST(TopoRulesLimits, LinksPerHost) {
  constexpr int kGpus = 182;
  std::string text = "<cohort_topology version=\"1\">\n<cpu id=\"cpu0\" numa=\"0\"/>\n";
  std::string links;
  int line = 2 + kGpus;
  int refused_on = 0;
  for (int a = 1; a <= kGpus; ++a) {
    text += "<gpu id=\"" + nth_bus_id(a) + "\"/>\n";
    links += "<link a=\"cpu0\" b=\"" + nth_bus_id(a) + "\" type=\"pci\"/>\n";
    if (++line - 2 - kGpus == rules::kMaxLinks + 1) refused_on = line;
    for (int b = a + 1; b <= kGpus; ++b) {
      links += "<link a=\"" + nth_bus_id(a) + "\" b=\"" + nth_bus_id(b) + "\" type=\"nvlink\"/>\n";
      if (++line - 2 - kGpus == rules::kMaxLinks + 1) refused_on = line;
    }
  }
  ASSERT_GT(refused_on, 0);
  expect_refused(text + links + "</cohort_topology>\n", refused_on,
                 {"<link>: one link too many (rule: at most 16384 links per host)"});
}

// 60,000 nodes once asked for an 86 GB path table; now the 4097th node ends the load.
TEST(TopoRulesLimits, SixtyThousandNodesAreRefusedInUnderASecond) {
  const std::string text = pcie_tree_xml(60000);
  ASSERT_GT(text.size(), 3u << 20);
  double seconds = seconds_of([&] {
    expect_refused(text, rules::kMaxNodes + 2,
                   {"<pci>: one node too many", "(rule: at most 4096 nodes per host)"});
  });
  EXPECT_LT(seconds, 1.0);
}

// The largest host allowed loads, and its dump loads again to the same text.
TEST(TopoRulesLimits, LargestHostAllowedRoundTrips) {
  Topology topo;
  ASSERT_EQ(from_xml(pcie_tree_xml(rules::kMaxNodes), "big.xml", &topo), COHORT_SUCCESS)
      << last_error();
  const std::string dump = to_xml(topo);
  Topology again;
  ASSERT_EQ(from_xml(dump, "dump.xml", &again), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(to_xml(again), dump);
}

// A file past 4 MiB is refused before it is parsed; the largest host allowed, dumped, fits
// well under it.
TEST(TopoRulesLimits, FilesPastFourMiBAreRefusedUnread) {
  Topology topo;
  ASSERT_EQ(from_xml(pcie_tree_xml(rules::kMaxNodes), "big.xml", &topo), COHORT_SUCCESS)
      << last_error();
  EXPECT_LT(to_xml(topo).size(), size_t{2} << 20);
  const std::string path =
      (std::filesystem::temp_directory_path() / "cohort_too_big_topology.xml").string();
  {
    std::ofstream out(path);
    out << "<cohort_topology>" << std::string((4 << 20) + 1, ' ') << "</cohort_topology>\n";
  }
  std::string text;
  EXPECT_EQ(xml_io::read_text_file("topology", path, &text), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("larger than 4 MiB"), std::string::npos) << last_error();
  std::filesystem::remove(path);
}

// ------------------------------------------------------------------ DOCTYPE, entities

// A 100 KB internal entity named 2000 times in one attribute expanded in quadratic time (9.6 s
// here); the DOCTYPE is refused before its declarations are read.
TEST(TopoRulesParse, DoctypeIsRefusedBeforeAnyEntityIsExpanded) {
  std::string references;
  for (int i = 0; i < 2000; ++i) references += "&e;";
  const std::string text = "<?xml version=\"1.0\"?>\n<!DOCTYPE cohort_topology [<!ENTITY e \"" +
                           std::string(100000, 'x') + "\">]>\n<cohort_topology version=\"1\" " +
                           "host=\"" + references + "\"/>\n";
  double seconds = seconds_of([&] {
    expect_refused(
        text, 2, {"<!DOCTYPE>: topology files take no DTD and no entities", "(rule: no DOCTYPE)"});
  });
  EXPECT_LT(seconds, 0.5);
  // Without a subset, or naming an external DTD, alike; the file's own entities still work.
  expect_refused("<!DOCTYPE cohort_topology>\n<cohort_topology version=\"1\"/>", 1,
                 {"(rule: no DOCTYPE)"});
  expect_refused(
      "<!DOCTYPE cohort_topology SYSTEM \"http://example.invalid/t.dtd\">"
      "<cohort_topology version=\"1\"/>",
      1, {"(rule: no DOCTYPE)"});
  Topology topo;
  ASSERT_EQ(from_xml("<cohort_topology version=\"1\" host=\"a&amp;b&#x43;\"/>", "f.xml", &topo),
            COHORT_SUCCESS)
      << last_error();
  EXPECT_EQ(topo.host, "a&bC");
}

// ------------------------------------------------------------------- attribute length

TEST(TopoRulesParse, AttributeLengthIsBounded) {
  const size_t max = xml_io::kMaxAttributeBytes;
  expect_loads(with_line_5("<assumed text=\"" + std::string(max, 'a') + "\"/>"));
  expect_refused(with_line_5("<assumed text=\"" + std::string(max + 1, 'a') + "\"/>"), 5,
                 {"assumed text='aaaa", "4097 bytes, more than the 4096 an attribute may hold",
                  "(rule: attribute length)"});
  // A 9 MiB attribute (libxml2 itself stops at 10 MB) is refused fast.
  std::string huge = with_line_5("<assumed text=\"" + std::string(9 << 20, 'a') + "\"/>");
  EXPECT_LT(seconds_of([&] { expect_refused(huge, 5, {"(rule: attribute length)"}); }), 1.0);
}

// The writer cuts a model string longer than readers take, at a character boundary, so a dump
// of any model loads again.
TEST(TopoRulesParse, DumpOfLongStringsLoadsAgain) {
  Topology topo = gpus_on_one_cpu(2);
  std::string e_acute;
  for (int i = 0; i < 3000; ++i) e_acute += "\xc3\xa9";  // 6000 bytes of 2-byte characters
  topo.host = e_acute;
  topo.assumptions.push_back(std::string(1 << 20, 'z'));
  const std::string dump = to_xml(topo);
  Topology loaded;
  ASSERT_EQ(from_xml(dump, "dump.xml", &loaded), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(loaded.host, e_acute.substr(0, xml_io::kMaxAttributeBytes));
  EXPECT_EQ(loaded.assumptions.back(), std::string(xml_io::kMaxAttributeBytes, 'z'));
  EXPECT_EQ(to_xml(loaded), dump);
}

// ----------------------------------------------------------------------- namespaces

TEST(TopoRulesParse, NamespacedRootNamesTheNamespace) {
  for (const char *root : {"<cohort_topology xmlns=\"urn:t\" version=\"1\"/>",
                           "<t:cohort_topology xmlns:t=\"urn:t\" version=\"1\"/>"}) {
    expect_refused(root, 1,
                   {"root element <cohort_topology> is in namespace 'urn:t'; Cohort topology "
                    "files use no namespace"});
  }
  expect_refused("<t:topology xmlns:t=\"urn:t\" version=\"1\"/>", 1,
                 {"root element is <t:topology>, expected <cohort_topology>"});
}

// ---------------------------------------------------------------------- link ends

// Two nodes of the given kinds (ids distinct even for one kind), a link of `type` between them,
// and a CPU every GPU hangs from, so that only the link's ends can make the file wrong.
std::string link_between_kinds(LinkType type, NodeType a, NodeType b) {
  auto id_of = [](NodeType kind, int which) -> std::string {
    switch (kind) {
      case NodeType::kCpu: return "cpu" + std::to_string(which);
      case NodeType::kNet: return "net" + std::to_string(which);
      case NodeType::kNvSwitch: return "nvswitch";
      default: return nth_bus_id(16 * static_cast<int>(kind) + which);
    }
  };
  const std::string x = id_of(a, 1), y = id_of(b, 2);
  std::string text = "<cohort_topology version=\"1\">\n<cpu id=\"cpu0\" numa=\"0\"/>\n";
  for (auto [kind, id, numa] : {std::tuple(a, x, 1), std::tuple(b, y, 2)}) {
    text += std::string("<") + node_type_name(kind) + " id=\"" + id + "\"";
    if (kind == NodeType::kCpu) text += " numa=\"" + std::to_string(numa) + "\"";
    text += "/>\n";
    if (kind == NodeType::kGpu) text += "<link a=\"cpu0\" b=\"" + id + "\" type=\"pci\"/>\n";
  }
  text += "<link a=\"" + x + "\" b=\"" + y + "\" type=\"" + link_type_name(type) + "\"/>\n";
  return text + "</cohort_topology>\n";
}

// Every link type between every pair of kinds: refused naming the rule exactly where the
// model has no such link.
TEST(TopoRulesLinks, TypeMatchesItsEnds) {
  const std::vector<std::tuple<LinkType, NodeType, NodeType>> allowed = {
      {LinkType::kNvLink, NodeType::kGpu, NodeType::kGpu},
      {LinkType::kNvLink, NodeType::kGpu, NodeType::kNvSwitch},
      {LinkType::kPci, NodeType::kGpu, NodeType::kPci},
      {LinkType::kPci, NodeType::kGpu, NodeType::kCpu},
      {LinkType::kPci, NodeType::kNic, NodeType::kPci},
      {LinkType::kPci, NodeType::kNic, NodeType::kCpu},
      {LinkType::kPci, NodeType::kPci, NodeType::kPci},
      {LinkType::kPci, NodeType::kPci, NodeType::kCpu},
      {LinkType::kCpu, NodeType::kCpu, NodeType::kCpu},
      {LinkType::kNet, NodeType::kNic, NodeType::kNet},
  };
  int refused = 0;
  for (int t = 0; t < static_cast<int>(LinkType::kCount); ++t) {
    for (int i = 0; i < static_cast<int>(NodeType::kCount); ++i) {
      for (int j = 0; j < static_cast<int>(NodeType::kCount); ++j) {
        const auto type = static_cast<LinkType>(t);
        const auto a = static_cast<NodeType>(i), b = static_cast<NodeType>(j);
        if (a == NodeType::kNvSwitch && b == NodeType::kNvSwitch) continue;  // one fabric a host
        SCOPED_TRACE(std::string(link_type_name(type)) + " " + node_type_name(a) + "-" +
                     node_type_name(b));
        bool ok = false;
        for (auto [row_type, x, y] : allowed) {
          ok |= row_type == type && ((x == a && y == b) || (x == b && y == a));
        }
        const std::string text = link_between_kinds(type, a, b);
        Topology topo;
        const Status s = from_xml(text, "f.xml", &topo);
        EXPECT_EQ(s == COHORT_SUCCESS, ok) << last_error() << "\n" << text;
        if (ok) continue;
        ++refused;
        const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) - 1;
        EXPECT_EQ(last_error().rfind("topology file f.xml line " + std::to_string(line) +
                                         ": <link type=\"" + link_type_name(type) + "\"> between ",
                                     0),
                  0u)
            << last_error();
        EXPECT_NE(last_error().find("(rule: link type matches its ends)"), std::string::npos);
      }
    }
  }
  EXPECT_EQ(refused, 4 * 35 - 17);  // 35 ordered pairs of kinds a type; 17 allowed in all
}

// ------------------------------------------------------------ identities, reachability

TEST(TopoRulesIdentity, GpuUuidsAndNumaNodesAreUnique) {
  expect_refused(
      with_line_5("<gpu id=\"0000:18:00.0\" uuid=\"00112233445566778899AABBCCDDEEFF\"/>"), 5,
      {"gpu uuid='00112233445566778899AABBCCDDEEFF': also the uuid of gpu 0000:17:00.0 "
       "on line 3 (rule: GPU uuids are unique)"});
  expect_refused(with_line_5("<cpu id=\"cpu1\" numa=\"0\"/>"), 5,
                 {"cpu numa='0': also the NUMA node of cpu0 on line 2 (rule: one CPU per NUMA "
                  "node)"});
  // An unknown NUMA node (-1) is no identity; nor is a GPU without a uuid.
  expect_loads(with_line_5("<cpu id=\"cpu1\" numa=\"-1\"/><cpu id=\"cpu2\" numa=\"-1\"/>"));
  expect_loads(
      with_line_5("<gpu id=\"0000:18:00.0\"/><gpu id=\"0000:19:00.0\"/>"
                  "<link a=\"cpu0\" b=\"0000:18:00.0\" type=\"pci\"/>"
                  "<link a=\"cpu0\" b=\"0000:19:00.0\" type=\"pci\"/>"));
}

TEST(TopoRulesReach, EveryGpuReachesACpu) {
  // Only NVLink: GPUs relay NVLink to NVLink only, so 18 has no way to host memory.
  expect_refused(with_line_5("<gpu id=\"0000:18:00.0\"/>\n"
                             "<link a=\"0000:17:00.0\" b=\"0000:18:00.0\" type=\"nvlink\"/>"),
                 5, {"gpu 0000:18:00.0: no PCI path to any CPU (rule: every GPU reaches a CPU)"});
  // Below a switch that no CPU is above.
  expect_refused(with_line_5("<pci id=\"0000:15:00.0\"/><gpu id=\"0000:18:00.0\"/>\n"
                             "<link a=\"0000:15:00.0\" b=\"0000:18:00.0\" type=\"pci\"/>"),
                 5, {"gpu 0000:18:00.0: no PCI path", "(rule: every GPU reaches a CPU)"});
  // Through two switches it does.
  expect_loads(
      with_line_5("<pci id=\"0000:15:00.0\"/><pci id=\"0000:16:00.0\"/>"
                  "<gpu id=\"0000:18:00.0\"/>"
                  "<link a=\"cpu0\" b=\"0000:15:00.0\" type=\"pci\"/>"
                  "<link a=\"0000:16:00.0\" b=\"0000:15:00.0\" type=\"pci\"/>"
                  "<link a=\"0000:16:00.0\" b=\"0000:18:00.0\" type=\"pci\"/>"));
}

// ------------------------------------------------------------------------- bandwidth

TEST(TopoRulesBandwidth, LinkBandwidthIsPhysical) {
  auto cpu_link = [](const std::string &attrs) {
    return with_line_5("<cpu id=\"cpu1\" numa=\"1\"/><link a=\"cpu0\" b=\"cpu1\" type=\"cpu\" " +
                       attrs + "/>");
  };
  for (const char *bw : {"1e308", "4e-320", "100001", "0.0099"}) {
    SCOPED_TRACE(bw);
    expect_refused(cpu_link(std::string("bw=\"") + bw + "\""), 5,
                   {std::string("link bw='") + bw + "'",
                    "out of range 0.01..100000 GB/s (rule: bandwidth is physical)"});
  }
  expect_refused(cpu_link("bw=\"10\" bw_back=\"1e308\""), 5,
                 {"link bw_back='1e308'", "(rule: bandwidth is physical)"});
  expect_loads(cpu_link("bw=\"0.01\" bw_back=\"100000\""));
  // A NIC's speed (Gb/s) is 0 (unknown) or a link's rate in bits.
  expect_refused(
      with_line_5("<nic id=\"0000:18:00.0\" speed=\"1e300\"/>"), 5,
      {"nic speed='1e300'", "0 (unknown) or 0.08..800000 Gb/s", "(rule: bandwidth is physical)"});
  expect_loads(
      with_line_5("<nic id=\"0000:18:00.0\" speed=\"0\"/><nic id=\"0000:19:00.0\" "
                  "speed=\"800000\"/>"));
}

// ------------------------------------------------------------------------- bad files

// Each file of test/data/topo-bad that says on its second line what it must be refused with
// ("<!-- expect: line 10: ... (rule: ...) -->") is refused with exactly that.
TEST(TopoRulesFiles, BadFilesAreRefusedAsTheySay) {
  const std::string folder = std::string(COHORT_TEST_DATA_DIR) + "/topo-bad";
  int checked = 0;
  for (const auto &entry : std::filesystem::directory_iterator(folder)) {
    const std::string path = entry.path().string();
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    const size_t at = line.find("expect: ");
    if (at == std::string::npos) continue;
    const std::string expected = line.substr(at + 8, line.rfind(" -->") - at - 8);
    SCOPED_TRACE(path);
    Topology topo;
    EXPECT_EQ(read_xml_file(path, &topo), COHORT_ERR_INVALID_ARG);
    EXPECT_EQ(last_error(), "topology file " + path + " " + expected);
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

// The reference machines meet every rule.
TEST(TopoRulesFiles, ReferenceMachinesLoad) {
  for (const char *name : kReferenceMachines) {
    Topology topo;
    EXPECT_EQ(read_xml_file(reference_path(name), &topo), COHORT_SUCCESS) << last_error();
  }
}

}  // namespace
}  // namespace cohort::topo
