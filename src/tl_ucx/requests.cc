#include "tl_ucx/requests.h"

#include "core/clock.h"

namespace cohort::tl_ucx {

void nop_send(void *, ucs_status_t, void *) {}
void nop_recv(void *, ucs_status_t, const ucp_tag_recv_info_t *, void *) {}

bool let_go(Worker &worker, void *request, bool cancel, int64_t deadline) {
  if (request == nullptr) return true;
  if (cancel) ucp_request_cancel(worker.handle(), request);
  while (ucp_request_check_status(request) == UCS_INPROGRESS && now_ns() < deadline) {
    worker.progress();
  }
  const bool done = ucp_request_check_status(request) != UCS_INPROGRESS;
  ucp_request_free(request);
  return done;
}

void close_endpoint(ucp_worker_h worker, ucp_ep_h ep) {
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void *request = ucp_ep_close_nbx(ep, &param);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) return;
  const int64_t deadline = deadline_after(1.0);
  while (ucp_request_check_status(request) == UCS_INPROGRESS && now_ns() < deadline) {
    ucp_worker_progress(worker);
  }
  ucp_request_free(request);
}

}  // namespace cohort::tl_ucx
