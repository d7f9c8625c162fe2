// Unit tests for topology detection (src/topo/detect*.cc, src/topo/nvml.cc): the parsers and
// merging steps on fabricated input, the PCI-tree walk on a fabricated hwloc XML, and
// detect() on this machine.
#include <gtest/gtest.h>

#include "clean_env.h"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "topo/bandwidth.h"
#include "topo/detect.h"
#include "topo/detect_cuda.h"
#include "topo/detect_internal.h"
#include "topo/nvml.h"
#include "topo/topo.h"

namespace cohort::topo {
namespace {

// ---------------------------------------------------------------------------- helpers

int add(Topology *topo, NodeType type, const std::string &id, int sm = 0) {
  Node node;
  node.type = type;
  node.id = id;
  node.sm = sm;
  if (type == NodeType::kCpu) node.numa = id[3] - '0';
  return topo->add_node(node);
}

const Link *link_of(const Topology &topo, int a, int b) {
  int l = topo.link_between(a, b);
  return l < 0 ? nullptr : &topo.links[l];
}

int count_links(const Topology &topo, LinkType type) {
  int n = 0;
  for (const Link &link : topo.links) n += link.type == type;
  return n;
}

bool has_assumption(const Topology &topo, const std::string &text) {
  for (const std::string &a : topo.assumptions) {
    if (a.find(text) != std::string::npos) return true;
  }
  return false;
}

void expect_same_model(const Topology &a, const Topology &b) {
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.assumptions, b.assumptions);
  EXPECT_EQ(a.no_p2p, b.no_p2p);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i];
    const Node &y = b.nodes[i];
    SCOPED_TRACE("node " + x.id);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.sm, y.sm);
    EXPECT_EQ(x.uuid, y.uuid);
    EXPECT_EQ(x.cuda_device, y.cuda_device);
    EXPECT_EQ(x.numa, y.numa);
    EXPECT_EQ(x.arch, y.arch);
    EXPECT_EQ(x.vendor, y.vendor);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.speed_gbps, y.speed_gbps);
    EXPECT_EQ(x.links, y.links);
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    const Link &x = a.links[i];
    const Link &y = b.links[i];
    SCOPED_TRACE("link " + std::to_string(i));
    EXPECT_EQ(x.from, y.from);
    EXPECT_EQ(x.to, y.to);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.bw, y.bw);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.pci_gen, y.pci_gen);
    EXPECT_EQ(x.pci_width, y.pci_width);
  }
}

// ---------------------------------------------------------------------------- parsers

TEST(DetectParse, PciGenFromLinkSpeed) {
  EXPECT_EQ(pci_gen_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pci_gen_from_speed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pci_gen_from_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pci_gen_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pci_gen_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pci_gen_from_speed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pci_gen_from_speed("8 GT/s"), 3);  // older kernels
  EXPECT_EQ(pci_gen_from_speed("Unknown"), 0);
  EXPECT_EQ(pci_gen_from_speed("3.0 GT/s PCIe"), 0);
  EXPECT_EQ(pci_gen_from_speed(""), 0);
}

TEST(DetectParse, PciWidth) {
  EXPECT_EQ(pci_width_from_text("16"), 16);
  EXPECT_EQ(pci_width_from_text("4"), 4);
  EXPECT_EQ(pci_width_from_text("0"), 0);
  EXPECT_EQ(pci_width_from_text("-3"), 0);
  EXPECT_EQ(pci_width_from_text(""), 0);
}

TEST(DetectParse, InfinibandRate) {
  EXPECT_EQ(ib_rate_gbps("400 Gb/sec (4X NDR)"), 400);
  EXPECT_EQ(ib_rate_gbps("200 Gb/sec (2X NDR)"), 200);
  EXPECT_EQ(ib_rate_gbps("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_EQ(ib_rate_gbps("Unknown"), 0);
  EXPECT_EQ(ib_rate_gbps(""), 0);
}

TEST(DetectParse, NetSpeedIsMegabits) {
  EXPECT_EQ(net_speed_gbps("100000"), 100);
  EXPECT_EQ(net_speed_gbps("25000"), 25);
  EXPECT_EQ(net_speed_gbps("-1"), 0);  // link down, or a virtual NIC
  EXPECT_EQ(net_speed_gbps(""), 0);
}

TEST(DetectParse, CpuVendorAndArch) {
  EXPECT_EQ(cpu_vendor_name("GenuineIntel"), "intel");
  EXPECT_EQ(cpu_vendor_name("AuthenticAMD"), "amd");
  EXPECT_EQ(cpu_vendor_name("HygonGenuine"), "hygongenuine");
  EXPECT_EQ(cpu_vendor_name(""), "");
  EXPECT_EQ(cpu_arch_name("ppc64le"), "ppc64");
  EXPECT_EQ(cpu_arch_name("x86_64"), "x86_64");
  EXPECT_EQ(cpu_arch_name("aarch64"), "aarch64");
}

TEST(DetectCuda, UuidIsLowerCaseHex) {
  const uint8_t bytes[16] = {0x00, 0x01, 0xab, 0xCD, 0x10, 0x20, 0x30, 0x40,
                             0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xff};
  EXPECT_EQ(uuid_hex(bytes), "0001abcd102030405060708090a0b0ff");
}

// ----------------------------------------------------------------------------- NVLinks

// One CPU and four GPUs on it, as the hwloc part would leave them.
class DetectNvLinks : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu_ = add(&topo_, NodeType::kCpu, "cpu0");
    for (const char *id : {"0000:17:00.0", "0000:3b:00.0", "0000:86:00.0", "0000:af:00.0"}) {
      gpus_.push_back(add(&topo_, NodeType::kGpu, id, 90));
      topo_.connect(gpus_.back(), cpu_, LinkType::kPci, pci_bw(4, 16), -1, 1, 4, 16);
    }
  }
  static NvmlGpu gpu(const std::string &bus_id, int sm = 90) {
    NvmlGpu out;
    out.bus_id = bus_id;
    out.sm = sm;
    return out;
  }
  static void links(NvmlGpu *gpu, int n, NvLinkPeer peer, const std::string &bus_id) {
    for (int i = 0; i < n; ++i) gpu->links.push_back({peer, bus_id});
  }
  Topology topo_;
  int cpu_ = -1;
  std::vector<int> gpus_;
};

TEST_F(DetectNvLinks, GpuPairReportedByBothEndsIsOneLink) {
  NvmlGpu a = gpu("0000:17:00.0"), b = gpu("0000:3b:00.0");
  links(&a, 4, NvLinkPeer::kGpu, "0000:3b:00.0");
  links(&b, 4, NvLinkPeer::kGpu, "0000:17:00.0");
  add_nvlinks({a, b}, &topo_);
  EXPECT_EQ(count_links(topo_, LinkType::kNvLink), 2);  // the two directions
  const Link *ab = link_of(topo_, gpus_[0], gpus_[1]);
  const Link *ba = link_of(topo_, gpus_[1], gpus_[0]);
  ASSERT_NE(ab, nullptr);
  ASSERT_NE(ba, nullptr);
  EXPECT_EQ(ab->type, LinkType::kNvLink);
  EXPECT_EQ(ab->count, 4);
  EXPECT_DOUBLE_EQ(ab->bw, 4 * nvlink_bw(90));
  EXPECT_DOUBLE_EQ(ba->bw, 4 * nvlink_bw(90));
  EXPECT_EQ(topo_.find(NodeType::kNvSwitch, "nvswitch"), -1);
  EXPECT_EQ(validate(topo_), COHORT_SUCCESS) << last_error();
}

TEST_F(DetectNvLinks, SwitchLinksJoinOneFabricNode) {
  std::vector<NvmlGpu> report;
  for (const char *id : {"0000:17:00.0", "0000:3b:00.0", "0000:86:00.0"}) {
    report.push_back(gpu(id));
    links(&report.back(), 18, NvLinkPeer::kSwitch, "0000:c1:00.0");
  }
  // An older NVML cannot say what the peer is: a bus id that is no GPU is the fabric.
  report.push_back(gpu("0000:af:00.0"));
  links(&report.back(), 12, NvLinkPeer::kUnknown, "0000:c2:00.0");
  add_nvlinks(report, &topo_);
  ASSERT_EQ(topo_.of_type(NodeType::kNvSwitch).size(), 1u);
  int fabric = topo_.find(NodeType::kNvSwitch, "nvswitch");
  ASSERT_GE(fabric, 0);
  for (int i = 0; i < 3; ++i) {
    const Link *link = link_of(topo_, gpus_[i], fabric);
    ASSERT_NE(link, nullptr);
    EXPECT_EQ(link->count, 18);
    EXPECT_DOUBLE_EQ(link->bw, 18 * nvlink_bw(90));
    ASSERT_NE(link_of(topo_, fabric, gpus_[i]), nullptr);
  }
  const Link *unknown = link_of(topo_, gpus_[3], fabric);
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->count, 12);
  EXPECT_EQ(link_of(topo_, gpus_[0], gpus_[1]), nullptr);
  EXPECT_EQ(count_links(topo_, LinkType::kNvLink), 8);
  EXPECT_EQ(validate(topo_), COHORT_SUCCESS) << last_error();
}

TEST_F(DetectNvLinks, UnknownPeerThatIsAGpuStaysAGpuLink) {
  NvmlGpu a = gpu("0000:17:00.0");
  links(&a, 2, NvLinkPeer::kUnknown, "0000:86:00.0");
  add_nvlinks({a}, &topo_);
  const Link *link = link_of(topo_, gpus_[0], gpus_[2]);
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->count, 2);
  EXPECT_EQ(topo_.find(NodeType::kNvSwitch, "nvswitch"), -1);
}

TEST_F(DetectNvLinks, ReportsThatDisagreeTakeTheLargerCount) {
  NvmlGpu a = gpu("0000:17:00.0"), c = gpu("0000:86:00.0");
  links(&a, 2, NvLinkPeer::kGpu, "0000:86:00.0");
  links(&a, 1, NvLinkPeer::kGpu, "0000:3b:00.0");  // 3b:00.0 was not asked
  links(&c, 3, NvLinkPeer::kGpu, "0000:17:00.0");
  add_nvlinks({a, c}, &topo_);
  ASSERT_NE(link_of(topo_, gpus_[0], gpus_[2]), nullptr);
  EXPECT_EQ(link_of(topo_, gpus_[0], gpus_[2])->count, 3);
  ASSERT_NE(link_of(topo_, gpus_[0], gpus_[1]), nullptr);
  EXPECT_EQ(link_of(topo_, gpus_[0], gpus_[1])->count, 1);
}

TEST_F(DetectNvLinks, CpuLinksAndStrangersAreLeftOut) {
  NvmlGpu a = gpu("0000:17:00.0");
  links(&a, 3, NvLinkPeer::kCpu, "0000:00:00.0");  // IBM NPU
  links(&a, 2, NvLinkPeer::kGpu, "0000:ee:00.0");  // a GPU outside the model
  links(&a, 1, NvLinkPeer::kGpu, "");              // remote PCI info unavailable
  NvmlGpu stranger = gpu("0000:ee:00.0");
  links(&stranger, 2, NvLinkPeer::kGpu, "0000:17:00.0");
  add_nvlinks({a, stranger}, &topo_);
  EXPECT_EQ(count_links(topo_, LinkType::kNvLink), 0);
  EXPECT_EQ(topo_.nodes.size(), 5u);
}

TEST_F(DetectNvLinks, SlowerEndSetsThePairRateAndNvmlFillsUnknownSm) {
  topo_.nodes[gpus_[1]].sm = 0;  // CUDA did not see it
  NvmlGpu a = gpu("0000:17:00.0", 90), b = gpu("0000:3b:00.0", 80);
  links(&a, 6, NvLinkPeer::kGpu, "0000:3b:00.0");
  add_nvlinks({a, b}, &topo_);
  EXPECT_EQ(topo_.nodes[gpus_[1]].sm, 80);
  EXPECT_EQ(topo_.nodes[gpus_[0]].sm, 90);  // a known sm is kept
  const Link *link = link_of(topo_, gpus_[0], gpus_[1]);
  ASSERT_NE(link, nullptr);
  EXPECT_DOUBLE_EQ(link->bw, 6 * nvlink_bw(80));
  EXPECT_NE(nvlink_bw(80), nvlink_bw(90));
}

// --------------------------------------------------------------------- merging CUDA's view

class DetectMerge : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu0_ = add(&topo_, NodeType::kCpu, "cpu0");
    cpu1_ = add(&topo_, NodeType::kCpu, "cpu1");
    topo_.connect(cpu0_, cpu1_, LinkType::kCpu, cpu_link_bw("intel"));
    int sw = add(&topo_, NodeType::kPci, "0000:16:00.0");
    topo_.connect(sw, cpu0_, LinkType::kPci, pci_bw(4, 16), -1, 1, 4, 16);
    gpu_ = add(&topo_, NodeType::kGpu, "0000:17:00.0");
    topo_.connect(gpu_, sw, LinkType::kPci, pci_bw(4, 16), -1, 1, 4, 16);
  }
  static CudaGpu cuda_gpu(const std::string &bus_id, int device, int numa) {
    CudaGpu gpu;
    gpu.bus_id = bus_id;
    gpu.cuda_device = device;
    gpu.sm = 90;
    gpu.uuid = std::string(31, '0') + std::to_string(device);
    gpu.numa_node = numa;
    return gpu;
  }
  Topology topo_;
  int cpu0_ = -1, cpu1_ = -1, gpu_ = -1;
};

TEST_F(DetectMerge, TreeGpuTakesCudaIdentity) {
  CudaGpus cuda;
  cuda.gpus.push_back(cuda_gpu("0000:17:00.0", 1, 0));
  merge_cuda_gpus(cuda, &topo_);
  EXPECT_EQ(topo_.nodes.size(), 4u);
  EXPECT_EQ(topo_.nodes[gpu_].cuda_device, 1);
  EXPECT_EQ(topo_.nodes[gpu_].sm, 90);
  EXPECT_EQ(topo_.nodes[gpu_].uuid, "00000000000000000000000000000001");
  EXPECT_TRUE(topo_.assumptions.empty());
}

TEST_F(DetectMerge, GpuOutsideTheTreeHangsOffItsNumaNodesCpu) {
  CudaGpus cuda;
  cuda.gpus.push_back(cuda_gpu("0000:99:00.0", 0, 1));
  cuda.gpus.push_back(cuda_gpu("0000:aa:00.0", 2, 7));  // no such CPU: the first
  cuda.gpus.push_back(cuda_gpu("0000:bb:00.0", 3, -1));
  cuda.no_p2p.push_back({"0000:99:00.0", "0000:aa:00.0"});
  merge_cuda_gpus(cuda, &topo_);
  int a = topo_.find(NodeType::kGpu, "0000:99:00.0");
  int b = topo_.find(NodeType::kGpu, "0000:aa:00.0");
  int c = topo_.find(NodeType::kGpu, "0000:bb:00.0");
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_GE(c, 0);
  ASSERT_NE(link_of(topo_, a, cpu1_), nullptr);
  EXPECT_EQ(link_of(topo_, a, cpu1_)->type, LinkType::kPci);
  EXPECT_NE(link_of(topo_, b, cpu0_), nullptr);
  EXPECT_NE(link_of(topo_, c, cpu0_), nullptr);
  EXPECT_EQ(topo_.nodes[a].cuda_device, 0);
  EXPECT_EQ(topo_.nodes[c].cuda_device, 3);
  EXPECT_EQ(topo_.nodes[gpu_].cuda_device, -1);  // CUDA does not see the tree's GPU
  ASSERT_EQ(topo_.assumptions.size(), 3u);
  EXPECT_EQ(topo_.assumptions[0], "GPU 0000:99:00.0 not in the PCI tree: attached to cpu1");
  EXPECT_EQ(topo_.assumptions[1], "GPU 0000:aa:00.0 not in the PCI tree: attached to cpu0");
  ASSERT_EQ(topo_.no_p2p.size(), 1u);
  EXPECT_EQ(topo_.no_p2p[0].second, "0000:aa:00.0");
  EXPECT_EQ(validate(topo_), COHORT_SUCCESS) << last_error();
}

TEST(DetectFlat, OnlyWhenNoGpuIsBelowASwitch) {
  Topology topo;
  int cpu = add(&topo, NodeType::kCpu, "cpu0");
  int a = add(&topo, NodeType::kGpu, "0000:01:00.0");
  topo.connect(a, cpu, LinkType::kPci, pci_bw(0, 0));
  EXPECT_FALSE(is_flat_pci_tree(topo));  // one GPU: nothing to say
  int b = add(&topo, NodeType::kGpu, "0000:02:00.0");
  topo.connect(b, cpu, LinkType::kPci, pci_bw(0, 0));
  EXPECT_TRUE(is_flat_pci_tree(topo));
  int sw = add(&topo, NodeType::kPci, "0000:03:00.0");
  topo.connect(sw, cpu, LinkType::kPci, pci_bw(0, 0));
  int c = add(&topo, NodeType::kGpu, "0000:04:00.0");
  topo.connect(c, sw, LinkType::kPci, pci_bw(0, 0));
  EXPECT_FALSE(is_flat_pci_tree(topo));
}

// ------------------------------------------------------------- the walk of an hwloc tree

// Pieces of an hwloc XML topology.  hwloc needs the complete_* sets of every object.
std::string xml_sets(unsigned mask) {
  return strprintf(R"(cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" complete_nodeset="0x%x")",
                   mask, mask, mask, mask);
}

std::string xml_socket(unsigned os_index, const std::string &io) {
  std::string sets = xml_sets(1u << os_index);
  return strprintf(R"(<object type="Package" os_index="%u" %s>
<info name="CPUVendor" value="AuthenticAMD"/>
<object type="NUMANode" os_index="%u" %s/>
<object type="PU" os_index="%u" %s/>
%s</object>
)",
                   os_index, sets.c_str(), os_index, sets.c_str(), os_index, sets.c_str(),
                   io.c_str());
}

// `type`: class, [vendor:device], [subsystem], revision, as hwloc writes them.
std::string xml_pci(const char *bus_id, const char *type, const std::string &children = "") {
  return strprintf(R"(<object type="PCIDev" pci_busid="%s" pci_type="%s">%s</object>
)",
                   bus_id, type, children.c_str());
}

std::string xml_bridge(const char *bus_id, const char *buses, const std::string &children) {
  return strprintf(R"(<object type="Bridge" bridge_type="1-1" depth="0" bridge_pci="%s"
 pci_busid="%s" pci_type="0604 [1000:c030] [0000:0000] 00">
%s</object>
)",
                   buses, bus_id, children.c_str());
}

std::string xml_host_bridge(const char *buses, const std::string &children) {
  return strprintf(R"(<object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="%s">
%s</object>
)",
                   buses, children.c_str());
}

constexpr const char *kNvGpu = "0302 [10de:2330] [10de:16c1] a1";

// Two AMD sockets.  Socket 0: an NVSwitch and, on root ports, a GPU and an NVMe drive.
// Socket 1: a root port, then a PCIe switch (upstream port 81:00.0, three downstream ports)
// with two GPUs and an InfiniBand NIC.  Domain 00ab so that no sysfs entry of a real host
// matches.
std::string two_socket_xml() {
  std::string socket0 = xml_host_bridge(
      "00ab:[00-0f]",
      xml_pci("00ab:00:05.0", "0680 [10de:22a3] [10de:1796] a1") +
          xml_bridge("00ab:00:01.0", "00ab:[01-01]", xml_pci("00ab:01:00.0", kNvGpu)) +
          xml_bridge("00ab:00:02.0", "00ab:[02-02]",
                     xml_pci("00ab:02:00.0", "0108 [144d:a80a] [144d:a801] 00")));
  std::string nic = xml_pci("00ab:85:00.0", "0207 [15b3:1021] [15b3:0041] 00",
                            R"(<object type="OSDev" name="ibcohorttest0" osdev_type="2"/>
<object type="OSDev" name="mlx5_cohorttest0" osdev_type="3"/>
)");
  std::string pcie_switch =
      xml_bridge("00ab:81:00.0", "00ab:[82-85]",
                 xml_bridge("00ab:82:00.0", "00ab:[83-83]", xml_pci("00ab:83:00.0", kNvGpu)) +
                     xml_bridge("00ab:82:01.0", "00ab:[84-84]", xml_pci("00ab:84:00.0", kNvGpu)) +
                     xml_bridge("00ab:82:02.0", "00ab:[85-85]", nic));
  std::string socket1 =
      xml_host_bridge("00ab:[80-8f]", xml_bridge("00ab:80:01.0", "00ab:[81-85]", pcie_switch));
  return R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
<object type="Machine" os_index="0" )" +
         xml_sets(3) + ">\n" + xml_socket(0, socket0) + xml_socket(1, socket1) +
         "</object>\n</topology>\n";
}

// Points hwloc at a fabricated topology (HWLOC_XMLFILE) for one test.
class DetectHwlocXml : public CleanEnvTest {
 protected:
  void SetUp() override {
    CleanEnvTest::SetUp();
    const char *old = getenv("HWLOC_XMLFILE");
    had_ = old != nullptr;
    if (had_) saved_ = old;
  }
  void TearDown() override {
    if (had_) {
      setenv("HWLOC_XMLFILE", saved_.c_str(), 1);
    } else {
      unsetenv("HWLOC_XMLFILE");
    }
    if (!path_.empty()) unlink(path_.c_str());
    CleanEnvTest::TearDown();
  }
  // Detects without CUDA and NVML, which would add this host's GPUs.
  Status detect_xml(const std::string &xml, Topology *topo) {
    char path[] = "/tmp/cohort_test_detect_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return COHORT_ERR_SYSTEM;
    close(fd);
    path_ = path;
    std::ofstream(path_) << xml;
    setenv("HWLOC_XMLFILE", path_.c_str(), 1);
    return detect(DetectOptions{false, false}, topo);
  }
  std::string path_, saved_;
  bool had_ = false;
};

TEST_F(DetectHwlocXml, WalksTheTreeIntoCpusSwitchesGpusAndNics) {
  Topology topo;
  ASSERT_EQ(detect_xml(two_socket_xml(), &topo), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(topo.nodes.size(), 8u);
  EXPECT_EQ(topo.links.size(), 14u);  // 7 links, both directions

  int cpu0 = topo.find(NodeType::kCpu, "cpu0");
  int cpu1 = topo.find(NodeType::kCpu, "cpu1");
  ASSERT_GE(cpu0, 0);
  ASSERT_GE(cpu1, 0);
  EXPECT_EQ(topo.nodes[cpu1].numa, 1);
  EXPECT_EQ(topo.nodes[cpu1].vendor, "amd");
  ASSERT_NE(link_of(topo, cpu0, cpu1), nullptr);
  EXPECT_DOUBLE_EQ(link_of(topo, cpu0, cpu1)->bw, cpu_link_bw("amd"));

  // Root ports merge into the CPU; the NVSwitch and the drive are left out.
  int lone = topo.find(NodeType::kGpu, "00ab:01:00.0");
  ASSERT_GE(lone, 0);
  EXPECT_NE(link_of(topo, lone, cpu0), nullptr);
  EXPECT_EQ(topo.find(NodeType::kPci, "00ab:00:01.0"), -1);
  EXPECT_EQ(topo.find(NodeType::kGpu, "00ab:00:05.0"), -1);

  // The switch is one node, its upstream port, on socket 1.
  ASSERT_EQ(topo.of_type(NodeType::kPci).size(), 1u);
  int sw = topo.find(NodeType::kPci, "00ab:81:00.0");
  ASSERT_GE(sw, 0);
  EXPECT_NE(link_of(topo, sw, cpu1), nullptr);
  for (const char *id : {"00ab:83:00.0", "00ab:84:00.0"}) {
    int gpu = topo.find(NodeType::kGpu, id);
    ASSERT_GE(gpu, 0) << id;
    ASSERT_NE(link_of(topo, gpu, sw), nullptr) << id;
    EXPECT_EQ(link_of(topo, gpu, sw)->type, LinkType::kPci);
    EXPECT_DOUBLE_EQ(link_of(topo, gpu, sw)->bw, pci_bw(0, 0));  // no sysfs for domain 00ab
    EXPECT_EQ(topo.nodes[gpu].cuda_device, -1);
  }

  int nic = topo.find(NodeType::kNic, "00ab:85:00.0");
  ASSERT_GE(nic, 0);
  EXPECT_EQ(topo.nodes[nic].name, "mlx5_cohorttest0");  // the verbs device, not ib0
  EXPECT_NE(link_of(topo, nic, sw), nullptr);
  int net = topo.find(NodeType::kNet, "net0");
  ASSERT_GE(net, 0);
  EXPECT_EQ(topo.nodes[net].name, "mlx5_cohorttest0");
  ASSERT_NE(link_of(topo, nic, net), nullptr);
  EXPECT_EQ(link_of(topo, nic, net)->type, LinkType::kNet);
  EXPECT_DOUBLE_EQ(link_of(topo, nic, net)->bw, nic_bw(0));

  EXPECT_TRUE(has_assumption(topo, "PCIe link speed unknown for 5 device(s)"));
  EXPECT_TRUE(has_assumption(topo, "NVML not used"));
  EXPECT_FALSE(has_assumption(topo, "flat PCI tree"));
  EXPECT_FALSE(has_assumption(topo, "NUMA"));
}

TEST_F(DetectHwlocXml, FlatTreeAndHostBridgeOfNoSocketAreAssumed) {
  // A VM: two GPUs on root ports of a host bridge that hwloc hangs from the whole machine.
  std::string io = xml_host_bridge(
      "00ab:[00-0f]",
      xml_bridge("00ab:00:01.0", "00ab:[01-01]", xml_pci("00ab:01:00.0", kNvGpu)) +
          xml_bridge("00ab:00:02.0", "00ab:[02-02]", xml_pci("00ab:02:00.0", kNvGpu)));
  std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
<object type="Machine" os_index="0" )" +
                    xml_sets(3) + ">\n" + xml_socket(0, "") + xml_socket(1, "") + io +
                    "</object>\n</topology>\n";
  Topology topo;
  ASSERT_EQ(detect_xml(xml, &topo), COHORT_SUCCESS) << last_error();
  int cpu0 = topo.find(NodeType::kCpu, "cpu0");
  for (const char *id : {"00ab:01:00.0", "00ab:02:00.0"}) {
    int gpu = topo.find(NodeType::kGpu, id);
    ASSERT_GE(gpu, 0) << id;
    EXPECT_NE(link_of(topo, gpu, cpu0), nullptr) << id;
  }
  EXPECT_TRUE(topo.of_type(NodeType::kPci).empty());
  EXPECT_TRUE(has_assumption(topo, "flat PCI tree: GPUs attached to the host bridge (a VM?)"));
  EXPECT_TRUE(
      has_assumption(topo, "NUMA node of PCI host bridge(s) 00ab:00 unknown: attached to cpu0"));
}

// ------------------------------------------------------------------------- this machine

class DetectHost : public CleanEnvTest {};

// NUMA nodes with CPUs, as sysfs lists them: the CPUs detection should find.
int sysfs_numa_nodes_with_cpus() {
  DIR *dir = opendir("/sys/devices/system/node");
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent *entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind("node", 0) != 0 || name.size() == 4 || !isdigit(name[4])) continue;
    std::string cpus;
    std::getline(std::ifstream("/sys/devices/system/node/" + name + "/cpulist"), cpus);
    n += !cpus.empty();
  }
  closedir(dir);
  return n;
}

// NVIDIA display controllers in sysfs: the GPUs hwloc can find.
std::set<std::string> sysfs_nvidia_gpus() {
  std::set<std::string> out;
  DIR *dir = opendir("/sys/bus/pci/devices");
  if (dir == nullptr) return out;
  while (dirent *entry = readdir(dir)) {
    std::string base = std::string("/sys/bus/pci/devices/") + entry->d_name;
    std::string vendor, cls;
    std::getline(std::ifstream(base + "/vendor"), vendor);
    std::getline(std::ifstream(base + "/class"), cls);
    if (vendor == "0x10de" && cls.rfind("0x03", 0) == 0)
      out.insert(normalize_bus_id(entry->d_name));
  }
  closedir(dir);
  return out;
}

TEST_F(DetectHost, BuildsAValidModel) {
  Topology topo;
  ASSERT_EQ(detect(DetectOptions{}, &topo), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(validate(topo), COHORT_SUCCESS) << last_error();
  EXPECT_FALSE(topo.host.empty());

  std::set<std::string> ids;
  for (const Node &node : topo.nodes) EXPECT_TRUE(ids.insert(node.id).second) << node.id;

  std::vector<int> cpus = topo.of_type(NodeType::kCpu);
  ASSERT_GE(cpus.size(), 1u);
  int numa_nodes = sysfs_numa_nodes_with_cpus();
  if (numa_nodes > 0) {
    EXPECT_EQ(static_cast<int>(cpus.size()), numa_nodes);
  }
  for (int cpu : cpus) {
    const Node &node = topo.nodes[cpu];
    if (node.numa >= 0) {
      EXPECT_EQ(node.id, "cpu" + std::to_string(node.numa));
    } else {
      EXPECT_EQ(node.id, "cpu0");  // NUMA unknown: the one CPU
    }
    EXPECT_FALSE(node.arch.empty());
  }

  std::set<std::string> expected_gpus = sysfs_nvidia_gpus();
  for (const CudaGpu &gpu : detect_cuda_gpus().gpus) expected_gpus.insert(gpu.bus_id);
  std::set<std::string> gpus;
  for (int gpu : topo.of_type(NodeType::kGpu)) gpus.insert(topo.nodes[gpu].id);
  EXPECT_EQ(gpus, expected_gpus);

  // Every NIC has its network port and every port its NIC.
  EXPECT_EQ(topo.of_type(NodeType::kNic).size(), topo.of_type(NodeType::kNet).size());
  for (int net : topo.of_type(NodeType::kNet)) {
    ASSERT_EQ(topo.nodes[net].links.size(), 1u);
    const Link &link = topo.links[topo.nodes[net].links[0]];
    EXPECT_EQ(link.type, LinkType::kNet);
    EXPECT_EQ(topo.nodes[link.to].type, NodeType::kNic);
  }
}

TEST_F(DetectHost, TwiceGivesTheSameModel) {
  Topology first, second;
  ASSERT_EQ(detect(DetectOptions{}, &first), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(detect(DetectOptions{}, &second), COHORT_SUCCESS) << last_error();
  expect_same_model(first, second);
}

TEST_F(DetectHost, WorksWithoutCudaAndNvml) {
  Topology with, without;
  ASSERT_EQ(detect(DetectOptions{}, &with), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(detect(DetectOptions{false, false}, &without), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(validate(without), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(without.of_type(NodeType::kCpu).size(), with.of_type(NodeType::kCpu).size());
  EXPECT_TRUE(without.no_p2p.empty());
  for (int gpu : without.of_type(NodeType::kGpu)) EXPECT_EQ(without.nodes[gpu].cuda_device, -1);
  // NVLinks join two GPUs or more: a host of one asks NVML nothing and assumes nothing.
  EXPECT_EQ(has_assumption(without, "NVML not used"), without.of_type(NodeType::kGpu).size() > 1);
  EXPECT_TRUE(without.of_type(NodeType::kNvSwitch).empty());
}

}  // namespace
}  // namespace cohort::topo
