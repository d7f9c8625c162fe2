#include "tl_ucx/net_devices.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/params.h"
#include "topo/host.h"
#include "topo/nic_affinity.h"
#include "topo/paths.h"

namespace cohort::tl_ucx {
namespace {

namespace fs = std::filesystem;

// Names of the entries of `dir`, sorted; none when it cannot be read.
std::vector<std::string> entries(const fs::path &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool present(const fs::path &p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string joined(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

std::vector<std::string> ucx_device_names(const std::string &name, const std::string &sys_root) {
  if (name.empty() || name.find('/') != std::string::npos) return {};
  const fs::path verbs = fs::path(sys_root) / "class/infiniband" / name;
  std::vector<std::string> names;
  if (present(verbs)) {
    for (const std::string &port : entries(verbs / "ports")) names.push_back(name + ":" + port);
    for (const std::string &netdev : entries(verbs / "device/net")) names.push_back(netdev);
  } else if (present(fs::path(sys_root) / "class/net" / name)) {
    names.push_back(name);
  }
  return names;
}

int physical_nic_count(const std::string &sys_root) {
  const fs::path ib = fs::path(sys_root) / "class/infiniband";
  std::set<std::string> of_verbs;  // interfaces of the verbs devices
  int count = 0;
  for (const std::string &dev : entries(ib)) {
    ++count;
    for (const std::string &netdev : entries(ib / dev / "device/net")) of_verbs.insert(netdev);
  }
  const fs::path net = fs::path(sys_root) / "class/net";
  for (const std::string &netdev : entries(net)) {
    if (!of_verbs.count(netdev) && present(net / netdev / "device")) ++count;
  }
  return count;
}

Status nearest_net_devices(const std::string &gpu_bus, std::string *devices, std::string *why) {
  devices->clear();
  int mode = 0;  // AUTO, OFF
  Status s = param_enum("NIC_AFFINITY", &mode);
  if (is_error(s)) return s;
  if (mode != 0) return *why = "COHORT_NIC_AFFINITY=OFF", COHORT_SUCCESS;
  if (const char *user = std::getenv("UCX_NET_DEVICES"); user != nullptr && *user != '\0') {
    return *why = strprintf("UCX_NET_DEVICES=%s set", user), COHORT_SUCCESS;
  }
  if (gpu_bus.empty()) return *why = "this rank has no GPU", COHORT_SUCCESS;
  if (physical_nic_count() < 2) return *why = "this host has one NIC or none", COHORT_SUCCESS;
  topo::HostTopology host;
  s = topo::host_topology(&host);
  if (is_error(s)) return s;
  if (host.from_file) {
    return *why = "the topology comes from a file (" + host.source + ")", COHORT_SUCCESS;
  }
  const topo::Topology &model = *host.topology;
  const int gpu = model.find(topo::NodeType::kGpu, topo::normalize_bus_id(gpu_bus));
  if (gpu < 0) return *why = "GPU " + gpu_bus + " is not in the topology", COHORT_SUCCESS;
  const topo::Paths paths(model);
  const int nic = topo::nic_of_gpu(model, paths, gpu);
  if (nic < 0) return *why = "no NIC is reachable from GPU " + gpu_bus, COHORT_SUCCESS;
  const topo::Node &node = model.nodes[nic];
  *devices = joined(ucx_device_names(node.name));
  *why =
      strprintf("GPU %s sends through NIC %s (%s, %s from the GPU)", gpu_bus.c_str(),
                node.name.c_str(), node.id.c_str(), topo::path_type_name(paths.get(gpu, nic).type));
  if (devices->empty()) *why += ", which UCX has no name for here";
  return COHORT_SUCCESS;
}

}  // namespace cohort::tl_ucx
