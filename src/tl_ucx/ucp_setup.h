// What the process's worker (worker.h) and the wire's lanes (lane.h) make alike: a UCX
// context and a worker on it, with the worker's network-only address, and endpoints that
// report a lost peer to a callback.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

#include "core/status.h"

namespace cohort::tl_ucx {

struct UcpParts {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::string address;  // network-only: peers on other hosts use network transports alone
};

// A context with `features` (UCP_FEATURE_*) on `net_devices` (UCX_NET_DEVICES' value; empty:
// UCX's choice) and a worker on it, serialised by its owner.  On failure: COHORT_ERR_SYSTEM,
// "UCX <call> for <owner> failed: <reason>"; what was made is in *out for the owner to free
// (ucp_worker_destroy, ucp_cleanup).
Status open_ucp(const char *owner, const std::string &net_devices, uint64_t features,
                UcpParts *out);

// An endpoint to the worker at `address` whose loss UCX reports to `on_error(arg)`.
ucs_status_t connect_ucp(ucp_worker_h worker, const std::string &address,
                         ucp_err_handler_cb_t on_error, void *arg, ucp_ep_h *out);

}  // namespace cohort::tl_ucx
