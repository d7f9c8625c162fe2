// Unit tests for graph files (src/topo/graph_xml.*): searched rings of the reference machines
// survive a dump and a load, a hand-written file loads and is measured, every malformed file
// names its line and its problem, and no input crashes the loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/status.h"
#include "topo/bandwidth.h"
#include "topo/graph_xml.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

// A topology and its paths, kept together because Paths is computed from the topology.
struct Machine {
  explicit Machine(const std::string &name) : topo(load_reference(name)), paths(topo) {}
  Topology topo;
  Paths paths;
};

int gpu(const Topology &topo, const std::string &id) {
  const int index = topo.find(NodeType::kGpu, id);
  EXPECT_GE(index, 0) << "no gpu " << id;
  return index;
}

// A dump keeps six significant digits.
void expect_same_bw(double x, double y) { EXPECT_NEAR(x, y, 1e-5 * std::max(1.0, std::fabs(x))); }

void expect_same_graph(const NodeGraph &x, const NodeGraph &y) {
  EXPECT_EQ(x.rings, y.rings);
  EXPECT_EQ(x.nets, y.nets);
  expect_same_bw(x.bw, y.bw);
  EXPECT_EQ(x.intra_type, y.intra_type);
  EXPECT_EQ(x.net_type, y.net_type);
  EXPECT_EQ(x.fallback, y.fallback);
  EXPECT_EQ(x.steps, y.steps);
}

size_t occurrences(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Search, dump, load, dump again: the same graph and the same bytes.
void expect_round_trip(const Machine &m, const std::vector<int> &gpus, bool cross_node) {
  SearchOptions options;
  options.cross_node = cross_node;
  const NodeGraph searched = search_rings(m.topo, m.paths, gpus, options);
  ASSERT_FALSE(searched.rings.empty());
  const std::string dump = graph_to_xml(m.topo, searched);
  EXPECT_EQ(occurrences(dump, "<channel"), searched.rings.size()) << dump;
  EXPECT_EQ(occurrences(dump, "<gpu "), searched.rings.size() * gpus.size()) << dump;
  EXPECT_EQ(occurrences(dump, "<channel net="), cross_node ? searched.rings.size() : 0u) << dump;
  NodeGraph loaded;
  ASSERT_EQ(graph_from_xml(dump, "dump.xml", m.topo, m.paths, gpus, &loaded), COHORT_SUCCESS)
      << last_error() << "\n"
      << dump;
  expect_same_graph(searched, loaded);
  EXPECT_EQ(graph_to_xml(m.topo, loaded), dump);
}

}  // namespace

// ------------------------------------------------------------------------ round trips

TEST(GraphXmlRoundTrip, SearchedRingsOfEveryReferenceMachine) {
  for (const char *name : kReferenceMachines) {
    const Machine m(name);
    const bool has_nics = !m.topo.of_type(NodeType::kNet).empty();
    for (bool cross_node : {false, true}) {
      if (cross_node && !has_nics) continue;
      SCOPED_TRACE(std::string(name) + (cross_node ? " cross-node" : " single host"));
      expect_round_trip(m, all_gpus(m.topo), cross_node);
    }
  }
}

// Teams that use some GPUs of a host: a prime count, two, and one (two channels on one GPU).
TEST(GraphXmlRoundTrip, SubsetsOfTheGpus) {
  const Machine m("h100-8gpu-nvswitch.xml");
  const std::vector<int> all = all_gpus(m.topo);
  for (size_t count : {7u, 2u, 1u}) {
    const std::vector<int> gpus(all.end() - static_cast<long>(count), all.end());
    for (bool cross_node : {false, true}) {
      SCOPED_TRACE(std::to_string(count) + " GPUs" + (cross_node ? " cross-node" : ""));
      expect_round_trip(m, gpus, cross_node);
    }
  }
}

TEST(GraphXmlRoundTrip, DumpFormatIsExact) {
  const Machine m("v100-4gpu-allpairs.xml");
  NodeGraph graph;
  graph.rings = {{gpu(m.topo, "0000:0b:00.0"), gpu(m.topo, "0000:06:00.0")},
                 {gpu(m.topo, "0000:06:00.0"), gpu(m.topo, "0000:0b:00.0")}};
  graph.nets = {-1, m.topo.find(NodeType::kNet, "net0")};
  graph.bw = 1.0 / 3;
  graph.intra_type = PathType::kNvl;
  graph.net_type = PathType::kPhb;
  graph.fallback = true;
  graph.steps = 12345678901L;
  const std::string expected =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<cohort_graph version=\"1\" host=\"v100-4gpu-allpairs\" channels=\"2\" bw=\"0.333333\" "
      "intra=\"NVL\" net=\"PHB\" fallback=\"1\" steps=\"12345678901\">\n"
      "  <channel>\n"
      "    <gpu id=\"0000:0b:00.0\"/>\n"
      "    <gpu id=\"0000:06:00.0\"/>\n"
      "  </channel>\n"
      "  <channel net=\"net0\">\n"
      "    <gpu id=\"0000:06:00.0\"/>\n"
      "    <gpu id=\"0000:0b:00.0\"/>\n"
      "  </channel>\n"
      "</cohort_graph>\n";
  const std::string dump = graph_to_xml(m.topo, graph);
  EXPECT_EQ(dump, expected);
  NodeGraph loaded;
  const std::vector<int> gpus = {gpu(m.topo, "0000:06:00.0"), gpu(m.topo, "0000:0b:00.0")};
  ASSERT_EQ(graph_from_xml(dump, "exact.xml", m.topo, m.paths, gpus, &loaded), COHORT_SUCCESS)
      << last_error();
  EXPECT_EQ(loaded.rings, graph.rings);
  EXPECT_EQ(loaded.nets, graph.nets);
  EXPECT_EQ(loaded.bw, 0.333333);  // the file's figure: lower than the paths allow
  EXPECT_TRUE(loaded.fallback);
  EXPECT_EQ(loaded.steps, 12345678901L);
  EXPECT_EQ(graph_to_xml(m.topo, loaded), dump);
}

// ---------------------------------------------------------------------------- loading

TEST(GraphXmlLoad, HandWrittenV100RingsAreMeasured) {
  const Machine m("v100-4gpu-allpairs.xml");
  // No bw, intra, net, fallback or steps; bus ids in other spellings; comments allowed.
  const std::string text =
      "<!-- two rings by hand -->\n"
      "<cohort_graph version=\"1\" channels=\"2\">\n"
      "  <channel>\n"
      "    <gpu id=\"0000:06:00.0\"/> <gpu id=\"0B:00.0\"/>\n"
      "    <gpu id=\"0000:07:00.0\"/> <!-- then the second switch -->\n"
      "    <gpu id=\"0000:0A:00.0\"/>\n"
      "  </channel>\n"
      "  <channel><gpu id=\"0000:0a:00.0\"/><gpu id=\"0000:07:00.0\"/>"
      "<gpu id=\"0000:0b:00.0\"/><gpu id=\"0000:06:00.0\"/></channel>\n"
      "</cohort_graph>\n";
  NodeGraph graph;
  ASSERT_EQ(graph_from_xml(text, "hand.xml", m.topo, m.paths, all_gpus(m.topo), &graph),
            COHORT_SUCCESS)
      << last_error();
  const int g06 = gpu(m.topo, "0000:06:00.0"), g07 = gpu(m.topo, "0000:07:00.0");
  const int g0a = gpu(m.topo, "0000:0a:00.0"), g0b = gpu(m.topo, "0000:0b:00.0");
  EXPECT_EQ(graph.rings,
            (std::vector<std::vector<int>>{{g06, g0b, g07, g0a}, {g0a, g07, g0b, g06}}));
  EXPECT_EQ(graph.nets, (std::vector<int>{-1, -1}));
  EXPECT_EQ(graph.intra_type, PathType::kNvl);
  EXPECT_EQ(graph.net_type, PathType::kLoc);
  EXPECT_DOUBLE_EQ(graph.bw, 2 * nvlink_bw(70));  // every hop is one NVLink pair
  EXPECT_FALSE(graph.fallback);
  EXPECT_EQ(graph.steps, 0);
}

// bw is the lower of the file's and the paths'; intra and net are always the paths'.
TEST(GraphXmlLoad, MeasuresBwAndTypesFromThePaths) {
  const Machine m("v100-4gpu-allpairs.xml");
  const std::string ring =
      "<gpu id=\"0000:06:00.0\"/><gpu id=\"0000:07:00.0\"/>"
      "<gpu id=\"0000:0a:00.0\"/><gpu id=\"0000:0b:00.0\"/>";
  auto load = [&](const std::string &root_attrs, const std::string &channel_attrs) {
    NodeGraph graph;
    const std::string text = "<cohort_graph version=\"1\" channels=\"1\" " + root_attrs +
                             "><channel " + channel_attrs + ">" + ring +
                             "</channel></cohort_graph>";
    EXPECT_EQ(graph_from_xml(text, "bw.xml", m.topo, m.paths, all_gpus(m.topo), &graph),
              COHORT_SUCCESS)
        << last_error();
    return graph;
  };
  EXPECT_EQ(load("bw=\"7.5\"", "").bw, 7.5);
  EXPECT_DOUBLE_EQ(load("bw=\"1000\"", "").bw, 2 * nvlink_bw(70));
  const NodeGraph claimed = load("bw=\"1000\" intra=\"loc\" net=\"SYS\"", "");
  EXPECT_EQ(claimed.intra_type, PathType::kNvl);
  EXPECT_EQ(claimed.net_type, PathType::kLoc);
  // Through the NIC on the first switch: net0 -> 06 and 0b -> net0 are PCIe within the host.
  const NodeGraph crossing = load("", "net=\"net0\"");
  EXPECT_EQ(crossing.nets, std::vector<int>{m.topo.find(NodeType::kNet, "net0")});
  EXPECT_EQ(crossing.intra_type, PathType::kNvl);
  EXPECT_EQ(crossing.net_type, PathType::kPhb);  // 0b reaches the NIC through the CPU
  EXPECT_DOUBLE_EQ(crossing.bw, nic_bw(100));
}

// A GPU pair with no path between them (two CPUs that nothing joins) cannot be a ring hop.
TEST(GraphXmlLoad, HopWithoutAPathIsRefused) {
  Topology topo;
  Node cpu0, cpu1, gpu_a, gpu_b;
  cpu0.id = "cpu0";
  cpu1.id = "cpu1";
  gpu_a.type = gpu_b.type = NodeType::kGpu;
  gpu_a.id = "0000:17:00.0";
  gpu_b.id = "0000:ca:00.0";
  const int c0 = topo.add_node(cpu0), c1 = topo.add_node(cpu1);
  const int a = topo.add_node(gpu_a), b = topo.add_node(gpu_b);
  topo.connect(a, c0, LinkType::kPci, 24);
  topo.connect(b, c1, LinkType::kPci, 24);
  const Paths paths(topo);
  ASSERT_EQ(paths.get(a, b).type, PathType::kDis);
  const std::string text =
      "<cohort_graph version=\"1\" channels=\"1\">\n"
      "  <channel><gpu id=\"0000:17:00.0\"/><gpu id=\"0000:ca:00.0\"/></channel>\n"
      "</cohort_graph>\n";
  NodeGraph graph;
  EXPECT_EQ(graph_from_xml(text, "split.xml", topo, paths, {a, b}, &graph), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(),
            "graph file split.xml line 2: channel 0: no path from gpu 0000:17:00.0 to gpu "
            "0000:ca:00.0");
}

TEST(GraphXmlLoad, GpusInUseMustBeGpusOfTheTopology) {
  const Machine m("v100-4gpu-allpairs.xml");
  const std::string text =
      graph_to_xml(m.topo, search_rings(m.topo, m.paths, all_gpus(m.topo), SearchOptions{}));
  NodeGraph graph;
  EXPECT_EQ(graph_from_xml(text, "g.xml", m.topo, m.paths, {}, &graph), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "graph file g.xml: no GPU in use to place on rings");
  const int cpu = m.topo.find(NodeType::kCpu, "cpu0");
  EXPECT_EQ(graph_from_xml(text, "g.xml", m.topo, m.paths, {cpu}, &graph), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("not a GPU"), std::string::npos) << last_error();
  EXPECT_EQ(graph_from_xml(text, "g.xml", m.topo, m.paths, {-1}, &graph), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(graph.rings.empty());
}

// ----------------------------------------------------------------------------- errors

namespace {

struct BadGraph {
  const char *name;
  std::string text;
  int line;
  std::vector<std::string> words;  // each must appear in the message
  size_t gpus_in_use = 4;          // the first GPUs of the V100 machine, in bus order
};

void PrintTo(const BadGraph &bad, std::ostream *out) { *out << bad.name; }

std::vector<int> first_gpus(const Topology &topo, size_t count) {
  const std::vector<int> all = all_gpus(topo);
  return std::vector<int>(all.begin(), all.begin() + static_cast<long>(count));
}

const char *const kV100Gpus[] = {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0"};

std::string gpu_line(const std::string &id) { return "    <gpu id=\"" + id + "\"/>\n"; }

// A valid one-channel file for the V100 machine: the root on line 2, <channel> on line 3, the
// four GPUs on lines 4 to 7.  `root` and `channel` add attributes; `gpus` replaces lines 4-7.
std::string graph_text(const std::string &root = "", const std::string &channel = "",
                       const std::string &gpus = "") {
  std::string body = gpus;
  if (body.empty()) {
    for (const char *id : kV100Gpus) body += gpu_line(id);
  }
  return "<?xml version=\"1.0\"?>\n<cohort_graph version=\"1\" channels=\"1\"" + root +
         ">\n  <channel" + channel + ">\n" + body + "  </channel>\n</cohort_graph>\n";
}

// The four GPU lines with line `n` (4..7) replaced.
std::string gpus_with_line(int n, const std::string &replacement) {
  std::string body;
  for (int i = 0; i < 4; ++i) body += i + 4 == n ? replacement : gpu_line(kV100Gpus[i]);
  return body;
}

// `count` channels, declared as `declared`; channel k starts on line 3 + 6k.
std::string channels_text(int declared, int count) {
  std::string text = "<?xml version=\"1.0\"?>\n<cohort_graph version=\"1\" channels=\"" +
                     std::to_string(declared) + "\">\n";
  for (int c = 0; c < count; ++c) {
    text += "  <channel>\n";
    for (const char *id : kV100Gpus) text += gpu_line(id);
    text += "  </channel>\n";
  }
  return text + "</cohort_graph>\n";
}

const BadGraph kBadGraphs[] = {
    {"Empty", "", 1, {"empty"}},
    {"NotXml", "this is not a graph\n", 1, {"not well-formed XML"}},
    {"Truncated", graph_text().substr(0, 110), 5, {"not well-formed XML"}},
    {"WrongRoot",
     "<?xml version=\"1.0\"?>\n<cohort_topology version=\"1\"/>\n",
     2,
     {"root element is <cohort_topology>", "<cohort_graph>"}},
    {"UnsupportedVersion",
     "<?xml version=\"1.0\"?>\n<cohort_graph version=\"2\" channels=\"1\"/>\n",
     2,
     {"version='2'", "unsupported version"}},
    {"MissingChannels",
     "<cohort_graph version=\"1\"><channel/></cohort_graph>",
     1,
     {"cohort_graph: missing attribute 'channels'"}},
    {"GpuListedTwice",
     graph_text("", "", gpus_with_line(6, gpu_line("0000:06:00.0"))),
     6,
     {"gpu id='0000:06:00.0'", "twice", "line 4"}},
    {"GpuListedTwiceInAnotherSpelling",
     graph_text("", "", gpus_with_line(7, gpu_line("07:00.0"))),
     7,
     {"gpu id='07:00.0'", "twice", "line 5"}},
    {"GpuMissing",
     graph_text("", "", gpus_with_line(5, "")),
     3,
     {"channel 0", "GPU 0000:07:00.0 is missing"}},
    {"EmptyChannel", graph_text("", "", "\n"), 3, {"GPU 0000:06:00.0 is missing"}},
    {"GpuNotInUse", graph_text(), 7, {"gpu id='0000:0b:00.0'", "not in use"}, 3},
    {"UnknownGpuId",
     graph_text("", "", gpus_with_line(5, gpu_line("0000:99:00.0"))),
     5,
     {"gpu id='0000:99:00.0'", "no GPU with this id"}},
    {"NicIsNotAGpu",
     graph_text("", "", gpus_with_line(5, gpu_line("0000:05:00.0"))),
     5,
     {"gpu id='0000:05:00.0'", "no GPU"}},
    {"GpuIdNotABusId",
     graph_text("", "", gpus_with_line(4, gpu_line("gpu0"))),
     4,
     {"gpu id='gpu0'", "PCI bus id"}},
    {"GpuWithoutId",
     graph_text("", "", gpus_with_line(4, "    <gpu/>\n")),
     4,
     {"gpu: missing attribute 'id'"}},
    {"UnknownNet", graph_text("", " net=\"net9\""), 3, {"channel net='net9'", "no net node"}},
    {"NetNamedByItsNic",
     graph_text("", " net=\"0000:05:00.0\""),
     3,
     {"channel net='0000:05:00.0'", "no net node"}},
    {"ChannelsMoreThanTheFileHolds",
     graph_text().replace(graph_text().find("channels=\"1\""), 12, "channels=\"2\""),
     2,
     {"channels='2'", "holds 1 <channel>"}},
    {"ChannelsFewerThanTheFileHolds",
     channels_text(2, 3),
     15,
     {"more <channel> elements than channels='2'"}},
    {"ZeroChannels", channels_text(0, 0), 2, {"channels='0'", "out of range 1..32"}},
    {"TooManyChannels", channels_text(33, 33), 2, {"channels='33'", "out of range 1..32"}},
    {"ChannelsNotANumber",
     "<cohort_graph version=\"1\" channels=\"two\"/>",
     1,
     {"channels='two'", "not an integer"}},
    {"BwZero", graph_text(" bw=\"0\""), 2, {"bw='0'", "> 0"}},
    {"BwNegative", graph_text(" bw=\"-20\""), 2, {"bw='-20'", "> 0"}},
    {"BwNotANumber", graph_text(" bw=\"fast\""), 2, {"bw='fast'", "not a number"}},
    {"BwNan", graph_text(" bw=\"nan\""), 2, {"bw='nan'", "not a number"}},
    {"BadIntraPathType",
     graph_text(" intra=\"NVLINK\""),
     2,
     {"intra='NVLINK'", "unknown path type", "NVL"}},
    {"BadNetPathType", graph_text(" net=\"IB\""), 2, {"net='IB'", "unknown path type"}},
    {"FallbackNotABoolean", graph_text(" fallback=\"yes\""), 2, {"fallback='yes'", "integer"}},
    {"FallbackTwo", graph_text(" fallback=\"2\""), 2, {"fallback='2'", "out of range 0..1"}},
    {"StepsNegative", graph_text(" steps=\"-1\""), 2, {"steps='-1'", "out of range"}},
    {"UnknownRootAttribute",
     graph_text(" hots=\"x\""),
     2,
     {"cohort_graph: unknown attribute 'hots'", "version, host, channels"}},
    {"UnknownChannelAttribute",
     graph_text("", " nic=\"0000:05:00.0\""),
     3,
     {"channel: unknown attribute 'nic'", "(allowed: net)"}},
    {"UnknownGpuAttribute",
     graph_text("", "", gpus_with_line(6, "    <gpu id=\"0000:0a:00.0\" rank=\"2\"/>\n")),
     6,
     {"gpu: unknown attribute 'rank'"}},
    {"UnknownElementInRoot",
     graph_text().replace(graph_text().find("  <channel>"), 0, "  <ring/>\n"),
     3,
     {"unknown element <ring>"}},
    {"UnknownElementInChannel",
     graph_text("", "", gpus_with_line(5, "    <nic id=\"0000:05:00.0\"/>\n")),
     5,
     {"unknown element <nic>"}},
    {"NamespacedGpu",
     graph_text("", "", gpus_with_line(5, "    <x:gpu xmlns:x=\"urn:x\" id=\"0000:07:00.0\"/>\n")),
     5,
     {"unknown element <x:gpu>"}},
    {"TextInChannel",
     graph_text("", "", gpus_with_line(6, "    ring\n")),
     6,
     {"unexpected text in <channel>"}},
    {"InvalidUtf8",
     "<cohort_graph version=\"1\" channels=\"1\">\n\xc3\x28</cohort_graph>",
     2,
     {"not well-formed XML"}},
    // An external entity is neither fetched nor expanded: the reference is unexpected text.
    {"ExternalEntity",
     "<!DOCTYPE c [<!ENTITY e SYSTEM \"/etc/hostname\">]>\n<cohort_graph version=\"1\" "
     "channels=\"1\"><channel>&e;</channel></cohort_graph>",
     2,
     {"unexpected text in <channel>"}},
    {"ElementInsideGpu",
     graph_text("", "", gpus_with_line(4, "    <gpu id=\"0000:06:00.0\"><next/></gpu>\n")),
     4,
     {"<next> inside <gpu>"}},
};

class GraphXmlBadFile : public ::testing::TestWithParam<BadGraph> {};

TEST_P(GraphXmlBadFile, NamesLineAndProblem) {
  const BadGraph &bad = GetParam();
  static const Machine m("v100-4gpu-allpairs.xml");
  const std::vector<int> gpus = first_gpus(m.topo, bad.gpus_in_use);
  NodeGraph graph;
  graph.steps = -7;
  ASSERT_EQ(graph_from_xml(bad.text, "bad.xml", m.topo, m.paths, gpus, &graph),
            COHORT_ERR_INVALID_ARG)
      << bad.text;
  const std::string &message = last_error();
  const std::string prefix = "graph file bad.xml line " + std::to_string(bad.line) + ": ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
  for (const std::string &word : bad.words) {
    EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
  }
  EXPECT_EQ(graph.steps, -7);  // set only on success
  EXPECT_TRUE(graph.rings.empty());
}

INSTANTIATE_TEST_SUITE_P(GraphXml, GraphXmlBadFile, ::testing::ValuesIn(kBadGraphs),
                         [](const ::testing::TestParamInfo<BadGraph> &info) {
                           return std::string(info.param.name);
                         });

}  // namespace

// Each error above comes from its one change: the files they start from are valid.
TEST(GraphXmlErrors, BaseOfTheBadFilesIsValid) {
  const Machine m("v100-4gpu-allpairs.xml");
  for (const std::string &text : {graph_text(), channels_text(32, 32)}) {
    NodeGraph graph;
    EXPECT_EQ(graph_from_xml(text, "base.xml", m.topo, m.paths, all_gpus(m.topo), &graph),
              COHORT_SUCCESS)
        << last_error();
  }
  NodeGraph graph;
  EXPECT_EQ(graph_from_xml(graph_text(" bw=\"20\" intra=\"NVL\" net=\"LOC\" fallback=\"0\" "
                                      "steps=\"0\" host=\"other\"",
                                      " net=\"net0\""),
                           "base.xml", m.topo, m.paths, all_gpus(m.topo), &graph),
            COHORT_SUCCESS)
      << last_error();
  EXPECT_EQ(graph.rings.size(), 1u);
}

// libxml2 prints parser and encoding errors to stderr unless told otherwise; a library must not.
TEST(GraphXmlErrors, NothingPrintedToStderr) {
  const Machine m("v100-4gpu-allpairs.xml");
  ::testing::internal::CaptureStderr();
  for (const BadGraph &bad : kBadGraphs) {
    NodeGraph graph;
    EXPECT_EQ(graph_from_xml(bad.text, "quiet.xml", m.topo, m.paths,
                             first_gpus(m.topo, bad.gpus_in_use), &graph),
              COHORT_ERR_INVALID_ARG)
        << bad.name;
  }
  // Encoding errors are found while converting ahead of the parser: no reliable line.
  NodeGraph graph;
  EXPECT_EQ(graph_from_xml("<?xml version=\"1.0\" encoding=\"EUC-JP\"?>\n<a>\xff\xfe</a>",
                           "quiet.xml", m.topo, m.paths, all_gpus(m.topo), &graph),
            COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// -------------------------------------------------------------- inputs that must not crash

namespace {

// Either an error that names the source and a line, or rings that hold every GPU once.
void expect_handled(const Machine &m, const std::vector<int> &gpus, const std::string &text,
                    const std::string &what) {
  NodeGraph graph;
  const Status s = graph_from_xml(text, "fuzz.xml", m.topo, m.paths, gpus, &graph);
  if (s != COHORT_SUCCESS) {
    EXPECT_EQ(s, COHORT_ERR_INVALID_ARG) << what;
    EXPECT_EQ(last_error().rfind("graph file fuzz.xml line ", 0), 0u)
        << what << ": " << last_error();
    return;
  }
  std::vector<int> sorted_gpus = gpus;
  std::sort(sorted_gpus.begin(), sorted_gpus.end());
  ASSERT_FALSE(graph.rings.empty()) << what;
  ASSERT_EQ(graph.nets.size(), graph.rings.size()) << what;
  for (std::vector<int> ring : graph.rings) {
    std::sort(ring.begin(), ring.end());
    EXPECT_EQ(ring, sorted_gpus) << what;
  }
  EXPECT_GT(graph.bw, 0) << what;
  const std::string dump = graph_to_xml(m.topo, graph);
  NodeGraph again;
  ASSERT_EQ(graph_from_xml(dump, "again.xml", m.topo, m.paths, gpus, &again), COHORT_SUCCESS)
      << what << ": " << last_error();
  EXPECT_EQ(graph_to_xml(m.topo, again), dump) << what;
}

}  // namespace

TEST(GraphXmlFuzz, EveryTruncationOfADump) {
  for (const char *name : {"v100-4gpu-allpairs.xml", "h100-8gpu-nvswitch.xml"}) {
    const Machine m(name);
    SearchOptions options;
    options.cross_node = true;
    const std::vector<int> gpus = all_gpus(m.topo);
    const std::string text = graph_to_xml(m.topo, search_rings(m.topo, m.paths, gpus, options));
    const size_t complete = text.rfind("</cohort_graph>") + strlen("</cohort_graph>");
    for (size_t length = 0; length <= text.size(); ++length) {
      NodeGraph graph;
      const Status s =
          graph_from_xml(text.substr(0, length), "fuzz.xml", m.topo, m.paths, gpus, &graph);
      // Only a prefix that still holds the closing root tag is a whole document.
      EXPECT_EQ(s == COHORT_SUCCESS, length >= complete) << name << " cut at " << length;
      if (s != COHORT_SUCCESS) {
        EXPECT_EQ(last_error().rfind("graph file fuzz.xml line ", 0), 0u) << last_error();
      }
    }
  }
}

TEST(GraphXmlFuzz, RandomEditsOfADump) {
  const Machine m("h100-8gpu-nvswitch.xml");
  SearchOptions options;
  options.cross_node = true;
  const std::vector<int> gpus = all_gpus(m.topo);
  const std::string text = graph_to_xml(m.topo, search_rings(m.topo, m.paths, gpus, options));
  std::mt19937 random(4242);
  const std::string alphabet = "<>/=\" \n0123456789abcdef:.-xgpuchanelt&;#";
  for (int i = 0; i < 800; ++i) {
    std::string edited = text;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !edited.empty(); ++e) {
      const size_t at = random() % edited.size();
      const char c =
          i % 3 == 0 ? static_cast<char>(random() % 256) : alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0: edited[at] = c; break;
        case 1: edited.erase(at, 1 + random() % 8); break;
        default: edited.insert(at, 1, c); break;
      }
    }
    expect_handled(m, gpus, edited, "edit " + std::to_string(i));
  }
}

// ------------------------------------------------------------------------------- files

namespace {

std::string temp_path(const std::string &name) {
  return ::testing::TempDir() + "cohort_graph_xml_" + std::to_string(getpid()) + "_" + name;
}

std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(GraphXmlFile, WriteThenRead) {
  const Machine m("h100-8gpu-nvswitch.xml");
  const std::vector<int> gpus = all_gpus(m.topo);
  const NodeGraph graph = search_rings(m.topo, m.paths, gpus, SearchOptions{});
  const std::string path = temp_path("rings.xml");
  ASSERT_EQ(write_graph_file(m.topo, graph, path), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(write_graph_file(m.topo, graph, path), COHORT_SUCCESS) << last_error();  // replaces
  EXPECT_EQ(read_text(path), graph_to_xml(m.topo, graph));
  NodeGraph loaded;
  ASSERT_EQ(read_graph_file(path, m.topo, m.paths, gpus, &loaded), COHORT_SUCCESS) << last_error();
  expect_same_graph(graph, loaded);
  unlink(path.c_str());
}

TEST(GraphXmlFile, ParseErrorsNameThePath) {
  const Machine m("v100-4gpu-allpairs.xml");
  const std::string path = temp_path("bad.xml");
  std::ofstream(path) << graph_text(" bw=\"0\"");
  NodeGraph graph;
  EXPECT_EQ(read_graph_file(path, m.topo, m.paths, all_gpus(m.topo), &graph),
            COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error().rfind("graph file " + path + " line 2: cohort_graph bw='0'", 0), 0u)
      << last_error();
  unlink(path.c_str());
}

TEST(GraphXmlFile, UnreadableFileNamesPathAndReason) {
  const Machine m("v100-4gpu-allpairs.xml");
  NodeGraph graph;
  const std::string missing = "/nonexistent-cohort-dir/graph.xml";
  EXPECT_EQ(read_graph_file(missing, m.topo, m.paths, all_gpus(m.topo), &graph),
            COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(last_error(), "graph file " + missing + ": cannot open: " + strerror(ENOENT));
}

TEST(GraphXmlFile, UnwritablePathIsASystemError) {
  const Machine m("v100-4gpu-allpairs.xml");
  const NodeGraph graph = search_rings(m.topo, m.paths, all_gpus(m.topo), SearchOptions{});
  const std::string path = "/nonexistent-cohort-dir/graph.xml";
  EXPECT_EQ(write_graph_file(m.topo, graph, path), COHORT_ERR_SYSTEM);
  EXPECT_EQ(last_error(), "graph dump " + path + ": cannot open: " + strerror(ENOENT));
  if (access("/dev/full", W_OK) == 0) {
    EXPECT_EQ(write_graph_file(m.topo, graph, "/dev/full"), COHORT_ERR_SYSTEM);
    EXPECT_NE(last_error().find(strerror(ENOSPC)), std::string::npos) << last_error();
  }
}

}  // namespace cohort::topo
