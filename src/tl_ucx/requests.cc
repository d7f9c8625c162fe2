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

}  // namespace cohort::tl_ucx
