// The NIC each GPU sends through (topo/nic_affinity.h) on recorded machines with several
// NICs, and UCX's names for a NIC read from a fabricated sysfs (tl_ucx/net_devices.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "clean_env.h"
#include "topo/nic_affinity.h"
#include "tl_ucx/net_devices.h"
#include "topo_fixture.h"

namespace cohort::topo {
namespace {

// GPU bus id -> the name of the NIC it sends through.
std::map<std::string, std::string> nic_names(const Topology &topo) {
  const Paths paths(topo);
  std::map<std::string, std::string> out;
  for (int gpu : all_gpus(topo)) {
    const int nic = nic_of_gpu(topo, paths, gpu);
    out[topo.nodes[gpu].id] = nic < 0 ? "" : topo.nodes[nic].name;
  }
  return out;
}

// A DGX H100 shape: two GPUs and two NICs per PCIe switch, both NICs equally near both GPUs:
// the GPUs take them in turn, so every GPU has a NIC of its own.
TEST(NicAffinity, H100EveryGpuItsOwnNicUnderItsSwitch) {
  const Topology topo = load_reference("h100-8gpu-nvswitch.xml");
  const std::map<std::string, std::string> want = {
      {"0000:1b:00.0", "mlx5_0"}, {"0000:43:00.0", "mlx5_1"}, {"0000:52:00.0", "mlx5_2"},
      {"0000:61:00.0", "mlx5_3"}, {"0000:9d:00.0", "mlx5_4"}, {"0000:c3:00.0", "mlx5_5"},
      {"0000:d1:00.0", "mlx5_6"}, {"0000:df:00.0", "mlx5_7"}};
  EXPECT_EQ(nic_names(topo), want);
  const Paths paths(topo);
  for (int gpu : all_gpus(topo)) {
    const std::vector<int> near = nearest_nics(topo, paths, gpu);
    ASSERT_EQ(near.size(), 2u) << topo.nodes[gpu].id;
    EXPECT_EQ(paths.get(gpu, near[0]).type, PathType::kPix) << topo.nodes[gpu].id;
  }
}

// One NIC per PCIe switch of two GPUs: both GPUs of a switch share it.
TEST(NicAffinity, V100SwitchNeighboursShareTheirNic) {
  const Topology topo = load_reference("v100-8gpu-cubemesh.xml");
  const std::map<std::string, std::string> want = {
      {"0000:06:00.0", "mlx5_0"}, {"0000:07:00.0", "mlx5_0"}, {"0000:0a:00.0", "mlx5_1"},
      {"0000:0b:00.0", "mlx5_1"}, {"0000:85:00.0", "mlx5_2"}, {"0000:86:00.0", "mlx5_2"},
      {"0000:89:00.0", "mlx5_3"}, {"0000:8a:00.0", "mlx5_3"}};
  EXPECT_EQ(nic_names(topo), want);
}

// A NIC per socket: a GPU uses its own socket's NIC, never one across the CPU link.
TEST(NicAffinity, PcieGpusStayOnTheirSocket) {
  const Topology topo = load_reference("pcie-8gpu.xml");
  const Paths paths(topo);
  std::set<std::string> used;
  for (int gpu : all_gpus(topo)) {
    const int nic = nic_of_gpu(topo, paths, gpu);
    ASSERT_GE(nic, 0) << topo.nodes[gpu].id;
    used.insert(topo.nodes[nic].name);
    EXPECT_LT(paths.get(gpu, nic).type, PathType::kSys) << hop_text(topo, paths, gpu, nic);
  }
  EXPECT_EQ(used, (std::set<std::string>{"mlx5_0", "mlx5_1"}));
}

TEST(NicAffinity, NoNicOrNoGpu) {
  const Topology topo = load_reference("pcie-2gpu-sys.xml");  // no NIC
  const Paths paths(topo);
  for (int gpu : all_gpus(topo)) EXPECT_EQ(nic_of_gpu(topo, paths, gpu), -1);
  const Topology h100 = load_reference("h100-8gpu-nvswitch.xml");
  const Paths h100_paths(h100);
  const int cpu = h100.of_type(NodeType::kCpu)[0];
  EXPECT_TRUE(nearest_nics(h100, h100_paths, cpu).empty()) << "a CPU is not a GPU";
  EXPECT_TRUE(nearest_nics(h100, h100_paths, -1).empty());
}

// A sysfs tree under a temporary folder.
class FakeSys {
 public:
  FakeSys() {
    char tmpl[] = "/tmp/cohort-sys-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~FakeSys() { std::filesystem::remove_all(root_); }
  void add(const std::string &path) { std::filesystem::create_directories(root_ + "/" + path); }
  const std::string &root() const { return root_; }

 private:
  std::string root_;
};

TEST(NetDevices, VerbsPortsAndTheirInterfaces) {
  FakeSys sys;
  sys.add("class/infiniband/mlx5_0/ports/1");
  sys.add("class/infiniband/mlx5_0/device/net/ibp24s0");
  sys.add("class/infiniband/mlx5_1/ports/1");
  sys.add("class/infiniband/mlx5_1/ports/2");
  sys.add("class/net/ibp24s0/device");
  sys.add("class/net/eth0/device");
  sys.add("class/net/lo");
  sys.add("class/net/docker0");
  using tl_ucx::ucx_device_names;
  EXPECT_EQ(ucx_device_names("mlx5_0", sys.root()),
            (std::vector<std::string>{"mlx5_0:1", "ibp24s0"}));
  EXPECT_EQ(ucx_device_names("mlx5_1", sys.root()),
            (std::vector<std::string>{"mlx5_1:1", "mlx5_1:2"}));
  EXPECT_EQ(ucx_device_names("eth0", sys.root()), (std::vector<std::string>{"eth0"}));
  EXPECT_TRUE(ucx_device_names("mlx5_9", sys.root()).empty()) << "a NIC of another machine";
  EXPECT_TRUE(ucx_device_names("../x", sys.root()).empty());
  // mlx5_0 with its interface, mlx5_1, eth0: lo and the bridge have no device.
  EXPECT_EQ(tl_ucx::physical_nic_count(sys.root()), 3);
}

class NetDevicesEnv : public CleanEnvTest {
 protected:
  void SetUp() override {
    CleanEnvTest::SetUp();
    if (const char *v = getenv("UCX_NET_DEVICES")) saved_ucx_ = v;
    unsetenv("UCX_NET_DEVICES");
  }
  void TearDown() override {
    if (saved_ucx_) setenv("UCX_NET_DEVICES", saved_ucx_->c_str(), 1);
    CleanEnvTest::TearDown();
  }

 private:
  std::optional<std::string> saved_ucx_;
};

TEST_F(NetDevicesEnv, LeftToUcxWhereItShould) {
  std::string devices, why;
  ASSERT_EQ(tl_ucx::nearest_net_devices("", &devices, &why), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(devices, "");
  EXPECT_NE(why.find("no GPU"), std::string::npos) << why;
  setenv("UCX_NET_DEVICES", "mlx5_3:1", 1);
  ASSERT_EQ(tl_ucx::nearest_net_devices("0000:1b:00.0", &devices, &why), COHORT_SUCCESS);
  EXPECT_EQ(devices, "");
  EXPECT_NE(why.find("UCX_NET_DEVICES=mlx5_3:1"), std::string::npos) << why;
  unsetenv("UCX_NET_DEVICES");
  setenv("COHORT_NIC_AFFINITY", "OFF", 1);
  ASSERT_EQ(tl_ucx::nearest_net_devices("0000:1b:00.0", &devices, &why), COHORT_SUCCESS);
  EXPECT_EQ(devices, "");
  EXPECT_NE(why.find("OFF"), std::string::npos) << why;
  setenv("COHORT_NIC_AFFINITY", "SOMETIMES", 1);
  EXPECT_EQ(tl_ucx::nearest_net_devices("0000:1b:00.0", &devices, &why), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("COHORT_NIC_AFFINITY"), std::string::npos) << last_error();
}

}  // namespace
}  // namespace cohort::topo
