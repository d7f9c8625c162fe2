#include "tl_ucx/worker.h"

#include <algorithm>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"
#include "core/threads.h"
#include "tl_ucx/net_devices.h"
#include "tl_ucx/requests.h"

namespace cohort::tl_ucx {
namespace {

std::mutex g_instance_mutex;
std::weak_ptr<Worker> g_instance;

Status ucx_failure(const char *call, ucs_status_t status) {
  return failf(COHORT_ERR_SYSTEM, "UCX %s failed: %s", call, ucs_status_string(status));
}

// A peer's worker became unreachable: every channel over the endpoint fails with the reason.
void on_endpoint_error(void *arg, ucp_ep_h, ucs_status_t status) {
  static_cast<Endpoint *>(arg)->fail(status);
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

Status lane_count(int ranks_on_host, int *out) {
  int64_t lanes = 0;
  Status s = param_int("UCX_LANES", &lanes);
  if (is_error(s)) return s;
  if (lanes == 0) lanes = online_cpus() / (4 * std::max(ranks_on_host, 1));
  *out = static_cast<int>(std::clamp<int64_t>(lanes, 1, kMaxLanes));
  return COHORT_SUCCESS;
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
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_failure("ucp_config_read", st);
  if (!net_devices.empty()) st = ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
  if (st != UCS_OK) {
    ucp_config_release(config);
    return ucx_failure("ucp_config_modify(NET_DEVICES)", st);
  }
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_failure("ucp_init", st);
  ucp_worker_params_t worker_params = {};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &worker_params, &worker_);
  if (st != UCS_OK) return ucx_failure("ucp_worker_create", st);
  // Peers on other hosts can only use network transports: a network-only address is smaller.
  ucp_worker_attr_t attr = {};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
  attr.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
  st = ucp_worker_query(worker_, &attr);
  if (st != UCS_OK) return ucx_failure("ucp_worker_query", st);
  address_.assign(reinterpret_cast<const char *>(attr.address), attr.address_length);
  ucp_worker_release_address(worker_, attr.address);
  for (int i = 0; i < lanes; ++i) {
    std::unique_ptr<Lane> lane;
    Status s = Lane::create(i, net_devices, &lane);
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
  ucp_ep_params_t params = {};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t *>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_endpoint_error;
  params.err_handler.arg = endpoint.get();
  ucs_status_t st = ucp_ep_create(worker_, &params, &endpoint->ep);
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
