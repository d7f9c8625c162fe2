#include "tl_ucx/ucp_setup.h"

namespace cohort::tl_ucx {
namespace {

Status refused(const char *owner, const char *call, ucs_status_t status) {
  return failf(COHORT_ERR_SYSTEM, "UCX %s for %s failed: %s", call, owner,
               ucs_status_string(status));
}

}  // namespace

Status open_ucp(const char *owner, const std::string &net_devices, uint64_t features,
                UcpParts *out) {
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return refused(owner, "ucp_config_read", st);
  if (!net_devices.empty()) st = ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
  if (st != UCS_OK) {
    ucp_config_release(config);
    return refused(owner, "ucp_config_modify(NET_DEVICES)", st);
  }
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = features;
  st = ucp_init(&params, config, &out->context);
  ucp_config_release(config);
  if (st != UCS_OK) return refused(owner, "ucp_init", st);
  ucp_worker_params_t worker_params = {};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(out->context, &worker_params, &out->worker);
  if (st != UCS_OK) return refused(owner, "ucp_worker_create", st);
  ucp_worker_attr_t attr = {};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
  attr.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
  st = ucp_worker_query(out->worker, &attr);
  if (st != UCS_OK) return refused(owner, "ucp_worker_query", st);
  out->address.assign(reinterpret_cast<const char *>(attr.address), attr.address_length);
  ucp_worker_release_address(out->worker, attr.address);
  return COHORT_SUCCESS;
}

ucs_status_t connect_ucp(ucp_worker_h worker, const std::string &address,
                         ucp_err_handler_cb_t on_error, void *arg, ucp_ep_h *out) {
  ucp_ep_params_t params = {};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t *>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  return ucp_ep_create(worker, &params, out);
}

}  // namespace cohort::tl_ucx
