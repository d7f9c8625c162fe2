#include "tl_ucx/worker.h"

#include <algorithm>

#include "core/clock.h"
#include "core/log.h"
#include "tl_ucx/net_devices.h"

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

void close_endpoint(ucp_worker_h worker, ucp_ep_h ep);

// Waits (bounded) for a close request, progressing the worker.
void wait_closed(ucp_worker_h worker, void *request) {
  if (request == nullptr || UCS_PTR_IS_ERR(request)) return;
  int64_t deadline = deadline_after(1.0);
  while (ucp_request_check_status(request) == UCS_INPROGRESS && now_ns() < deadline) {
    ucp_worker_progress(worker);
  }
  ucp_request_free(request);
}

void close_endpoint(ucp_worker_h worker, ucp_ep_h ep) {
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  wait_closed(worker, ucp_ep_close_nbx(ep, &param));
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

Status Worker::acquire(const std::string &gpu_bus, std::shared_ptr<Worker> *out) {
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
  std::shared_ptr<Worker> fresh;
  s = create(&fresh, devices);
  if (is_error(s)) return s;
  g_instance = fresh;
  *out = std::move(fresh);
  return COHORT_SUCCESS;
}

Status Worker::create(std::shared_ptr<Worker> *out, const std::string &net_devices) {
  std::shared_ptr<Worker> fresh(new Worker());
  Status s = fresh->init(net_devices);
  if (is_error(s)) return s;
  *out = std::move(fresh);
  return COHORT_SUCCESS;
}

Status Worker::init(const std::string &net_devices) {
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
  COHORT_LOG_INFO(COLL, "UCX worker up: address of %zu bytes", address_.size());
  return COHORT_SUCCESS;
}

Worker::~Worker() {
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
