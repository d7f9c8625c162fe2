// The topology model's own rules (ids, canonical order, validation), the bandwidth table, and
// the round trip of this machine's detected model through XML.
#include <gtest/gtest.h>

#include "clean_env.h"
#include "topo/bandwidth.h"
#include "topo/detect.h"
#include "topo/topo.h"
#include "topo/xml.h"

namespace cohort::topo {
namespace {

Topology two_gpus_on_a_switch() {
  Topology t;
  Node cpu;
  cpu.type = NodeType::kCpu;
  cpu.id = "cpu0";
  cpu.numa = 0;
  Node sw;
  sw.type = NodeType::kPci;
  sw.id = "0000:10:00.0";
  Node g1;
  g1.type = NodeType::kGpu;
  g1.id = "0000:12:00.0";
  Node g0 = g1;
  g0.id = "0000:11:00.0";
  int gpu1 = t.add_node(g1);  // deliberately out of canonical order
  int s = t.add_node(sw);
  int c = t.add_node(cpu);
  int gpu0 = t.add_node(g0);
  t.connect(s, c, LinkType::kPci, pci_bw(4, 16));
  t.connect(gpu1, s, LinkType::kPci, pci_bw(4, 16));
  t.connect(gpu0, s, LinkType::kPci, pci_bw(4, 16), pci_bw(4, 8));
  return t;
}

}  // namespace

// Every name reads back to its value; node type names are element names and match exactly,
// link and path type names in any case.
TEST(TopoModel, NamesReadBack) {
  for (int t = 0; t < static_cast<int>(NodeType::kCount); ++t) {
    NodeType back = NodeType::kCount;
    EXPECT_TRUE(node_type_from_name(node_type_name(static_cast<NodeType>(t)), &back));
    EXPECT_EQ(back, static_cast<NodeType>(t));
  }
  for (int t = 0; t < static_cast<int>(PathType::kCount); ++t) {
    PathType back = PathType::kCount;
    EXPECT_TRUE(path_type_from_name(path_type_name(static_cast<PathType>(t)), &back));
    EXPECT_EQ(back, static_cast<PathType>(t));
  }
  NodeType node;
  EXPECT_FALSE(node_type_from_name("GPU", &node));
  EXPECT_FALSE(node_type_from_name("link", &node));
  LinkType link;
  ASSERT_TRUE(link_type_from_name("NVLink", &link));
  EXPECT_EQ(link, LinkType::kNvLink);
  PathType path;
  ASSERT_TRUE(path_type_from_name("nvb", &path));
  EXPECT_EQ(path, PathType::kNvb);
  EXPECT_FALSE(path_type_from_name("NV", &path));
}

TEST(TopoModel, NormalizesBusIds) {
  EXPECT_EQ(normalize_bus_id("0000:B1:00.0"), "0000:b1:00.0");
  EXPECT_EQ(normalize_bus_id("b1:00.0"), "0000:b1:00.0");
  EXPECT_EQ(normalize_bus_id("0001:3B:1f.7"), "0001:3b:1f.7");
  for (const char *bad : {"", "gpu0", "0000:b1:00", "0000:100:00.0", "0000:b1:20.0", "0000:b1:00.8",
                          "0000:b1:00.0x", "0x00:b1:00.0", " 0000:b1:00.0", "+000:b1:00.0"}) {
    EXPECT_EQ(normalize_bus_id(bad), "") << bad;
  }
}

TEST(TopoModel, CanonicalOrderIsByTypeThenIdAndKeepsLinks) {
  Topology t = two_gpus_on_a_switch();
  canonicalize(&t);
  ASSERT_EQ(t.nodes.size(), 4u);
  EXPECT_EQ(t.nodes[0].id, "0000:11:00.0");
  EXPECT_EQ(t.nodes[1].id, "0000:12:00.0");
  EXPECT_EQ(t.nodes[2].type, NodeType::kPci);
  EXPECT_EQ(t.nodes[3].type, NodeType::kCpu);
  // GPU 0's link keeps its two directions' rates after renumbering.
  int up = t.link_between(0, 2);
  int down = t.link_between(2, 0);
  ASSERT_GE(up, 0);
  ASSERT_GE(down, 0);
  EXPECT_DOUBLE_EQ(t.links[up].bw, pci_bw(4, 16));
  EXPECT_DOUBLE_EQ(t.links[down].bw, pci_bw(4, 8));
  EXPECT_EQ(validate(t), COHORT_SUCCESS) << last_error();
}

TEST(TopoModel, ValidationNamesTheProblem) {
  Topology t = two_gpus_on_a_switch();
  t.nodes[1].id = t.nodes[0].id;  // two GPUs, one id
  EXPECT_EQ(validate(t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("have the id"), std::string::npos) << last_error();
  t = two_gpus_on_a_switch();
  t.connect(0, 1, LinkType::kPci, 1.0);  // a second link GPU - switch
  EXPECT_EQ(validate(t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("two links"), std::string::npos) << last_error();

  t = two_gpus_on_a_switch();
  t.links[0].bw = 0;
  EXPECT_EQ(validate(t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("bandwidth"), std::string::npos) << last_error();

  t = two_gpus_on_a_switch();
  Node lone;
  lone.type = NodeType::kGpu;
  lone.id = "0000:99:00.0";
  t.add_node(lone);
  EXPECT_EQ(validate(t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("0000:99:00.0"), std::string::npos) << last_error();
}

TEST(TopoModel, BandwidthTable) {
  EXPECT_DOUBLE_EQ(nvlink_bw(90), 20.6);
  EXPECT_DOUBLE_EQ(nvlink_bw(100), 40.1);
  EXPECT_DOUBLE_EQ(nvlink_bw(70), 20.0);
  EXPECT_DOUBLE_EQ(nvlink_bw(60), 18.0);
  EXPECT_STREQ(nvlink_generation(90), "NVLink4");
  EXPECT_NEAR(pci_bw(4, 16), 25.2, 0.01);
  EXPECT_NEAR(pci_bw(5, 16), 50.4, 0.01);
  EXPECT_DOUBLE_EQ(pci_bw(0, 0), pci_bw(3, 16));  // unknown: Gen3 x16
  EXPECT_DOUBLE_EQ(pci_bw(4, 8) * 2, pci_bw(4, 16));
  EXPECT_GT(cpu_link_bw("amd"), cpu_link_bw("intel"));
  EXPECT_LT(cpu_link_bw("who-knows"), cpu_link_bw("intel"));
  EXPECT_DOUBLE_EQ(nic_bw(400), 50.0);
  EXPECT_DOUBLE_EQ(nic_bw(0), kDefaultNicGbps / 8);
}

class TopoRoundTrip : public CleanEnvTest {};

// detect -> dump -> load -> dump gives the same bytes, on whatever machine runs the test.
TEST_F(TopoRoundTrip, DetectedModelSurvivesXmlByteForByte) {
  Topology detected;
  ASSERT_EQ(detect(DetectOptions{}, &detected), COHORT_SUCCESS) << last_error();
  std::string first = to_xml(detected);
  Topology loaded;
  ASSERT_EQ(from_xml(first, "dump", &loaded), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(to_xml(loaded), first);
  EXPECT_EQ(loaded.nodes.size(), detected.nodes.size());
  EXPECT_EQ(loaded.links.size(), detected.links.size());
  EXPECT_EQ(loaded.assumptions, detected.assumptions);
  EXPECT_NE(first.find("<cpu "), std::string::npos) << first;
}

}  // namespace cohort::topo
