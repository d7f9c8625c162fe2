#include "tl_ucx/worker.h"

#include <algorithm>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"
#include "core/threads.h"
#include "tl_ucx/net_devices.h"
#include "tl_ucx/requests.h"
#include "tl_ucx/ucp_setup.h"

namespace cohort::tl_ucx {
namespace {

std::mutex g_instance_mutex;
std::weak_ptr<Worker> g_instance;

// A peer's worker became unreachable: every channel over the endpoint fails with the reason.
void on_endpoint_error(void *arg, ucp_ep_h, ucs_status_t status) {
  static_cast<Endpoint *>(arg)->fail(status);
}

// Lanes for a process whose host runs `ranks_on_host` ranks of the team that makes the
// worker: COHORT_UCX_LANES, or where that is 0, half the host's CPUs per rank, from 1 to
// kMaxLanes (a lane's thread runs only while a fragment of its own is in flight).
Status lane_count(int ranks_on_host, int *out) {
  int64_t lanes = 0;
  Status s = param_int("UCX_LANES", &lanes);
  if (is_error(s)) return s;
  if (lanes == 0) lanes = online_cpus() / (2 * std::max(ranks_on_host, 1));
  *out = static_cast<int>(std::clamp<int64_t>(lanes, 1, kMaxLanes));
  return COHORT_SUCCESS;
}

}  // namespace

Status Endpoint::failure() const {
  if (status == UCS_OK) return COHORT_SUCCESS;
  return failf(COHORT_ERR_SYSTEM, "UCX connection to %s failed: %s", who.c_str(),
               ucs_status_string(status));
}

void Endpoint::fail(ucs_status_t reason) {
  if (status != UCS_OK) return;
  status = reason;
  // Not a warning by itself: a peer that ended its part of the job closes its connections
  // too.  A collective that needs this endpoint fails with it, and that failure is warned of.
  COHORT_LOG_INFO(NET, "UCX connection to %s failed: %s", who.c_str(), ucs_status_string(reason));
}

Status Worker::acquire(const std::string &gpu_bus, int ranks_on_host,
                       std::shared_ptr<Worker> *out) {
  std::lock_guard<std::mutex> lock(g_instance_mutex);
  if (std::shared_ptr<Worker> live = g_instance.lock()) {
    *out = std::move(live);
    return COHORT_SUCCESS;
  }
  std::string devices, why;
  Status s = nearest_net_devices(gpu_bus, &devices, &why);
  if (is_error(s)) return s;
  if (devices.empty()) {
    COHORT_LOG_INFO(NET, "UCX picks its network devices: %s", why.c_str());
  } else {
    COHORT_LOG_INFO(NET, "UCX_NET_DEVICES=%s: %s", devices.c_str(), why.c_str());
  }
  int lanes = 1;
  s = lane_count(ranks_on_host, &lanes);
  if (is_error(s)) return s;
  std::shared_ptr<Worker> fresh;
  s = create(&fresh, devices, lanes);
  if (is_error(s)) return s;
  g_instance = fresh;
  *out = std::move(fresh);
  return COHORT_SUCCESS;
}

Status Worker::create(std::shared_ptr<Worker> *out, const std::string &net_devices, int lanes) {
  std::shared_ptr<Worker> fresh(new Worker());
  Status s = fresh->init(net_devices, lanes);
  if (is_error(s)) return s;
  *out = std::move(fresh);
  return COHORT_SUCCESS;
}

Status Worker::init(const std::string &net_devices, int lanes) {
  UcpParts parts;
  Status s = open_ucp("the process's worker", net_devices, UCP_FEATURE_TAG, &parts);
  context_ = parts.context;
  worker_ = parts.worker;
  address_ = std::move(parts.address);
  if (is_error(s)) return s;
  for (int i = 0; i < lanes; ++i) {
    std::unique_ptr<Lane> lane;
    s = Lane::create(i, net_devices, &lane);
    if (is_error(s)) return s;
    lanes_.push_back(std::move(lane));
  }
  COHORT_LOG_INFO(COLL, "UCX worker up: address of %zu bytes, %d lanes for direct messages",
                  address_.size(), lanes);
  return COHORT_SUCCESS;
}

std::vector<std::string> Worker::lane_addresses() const {
  std::vector<std::string> out;
  for (const auto &lane : lanes_) out.push_back(lane->address());
  return out;
}

Status Worker::lane_links(const std::vector<std::string> &addresses, const std::string &who,
                          std::vector<LaneLink> *out) {
  out->clear();
  for (size_t i = 0; i < std::min(addresses.size(), lanes_.size()); ++i) {
    LaneLink link{lanes_[i].get(), nullptr};
    Status s = link.lane->endpoint(addresses[i], who, &link.to);
    if (is_error(s)) return s;
    out->push_back(link);
  }
  return COHORT_SUCCESS;
}

std::vector<Lane *> Worker::lanes(size_t n) const {
  std::vector<Lane *> out;
  for (size_t i = 0; i < std::min(n, lanes_.size()); ++i) out.push_back(lanes_[i].get());
  return out;
}

Worker::~Worker() {
  lanes_.clear();
  if (worker_ != nullptr) {
    for (auto &[address, endpoint] : endpoints_) close_endpoint(worker_, endpoint->ep);
    ucp_worker_destroy(worker_);
  }
  if (context_ != nullptr) ucp_cleanup(context_);
}

Status Worker::endpoint(const std::string &address, const std::string &who, Endpoint **out) {
  if (auto it = endpoints_.find(address); it != endpoints_.end()) {
    if (it->second->status == UCS_OK) {
      *out = it->second;
      return COHORT_SUCCESS;
    }
    close_endpoint(worker_, it->second->ep);  // failed: its channels keep reporting that
    endpoints_.erase(it);
  }
  auto endpoint = std::make_unique<Endpoint>();
  endpoint->who = who;
  const ucs_status_t st =
      connect_ucp(worker_, address, on_endpoint_error, endpoint.get(), &endpoint->ep);
  if (st != UCS_OK) {
    return failf(COHORT_ERR_SYSTEM, "UCX ucp_ep_create to %s failed: %s", who.c_str(),
                 ucs_status_string(st));
  }
  endpoints_.emplace(address, endpoint.get());
  *out = endpoint.get();
  all_endpoints_.push_back(std::move(endpoint));
  return COHORT_SUCCESS;
}

uint64_t Worker::new_team_id() {
  std::lock_guard<std::mutex> lock(ids_mutex_);
  return next_team_id_++;
}

}  // namespace cohort::tl_ucx
