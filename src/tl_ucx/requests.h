// What the channels (tag_channel.cc, direct.cc) share about UCX requests: completions are found
// by polling the request, and a request still in flight at teardown is let go of, bounded.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>

#include "tl_ucx/worker.h"

namespace cohort::tl_ucx {

// Receives match one tag exactly.
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

// Callbacks that do nothing: a request's end is polled (ucp_request_check_status).
void nop_send(void *request, ucs_status_t status, void *user);
void nop_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user);

// Lets go of a request still in flight at destruction: a posted receive is cancelled
// (`cancel`), a send is given until `deadline` to finish (its peer has matched it by then in
// every orderly teardown; only the acknowledgement is outstanding).  Returns false if UCX may
// still use the buffer: the caller then leaves the buffer to UCX rather than free memory it may
// touch.
bool let_go(Worker &worker, void *request, bool cancel, int64_t deadline);

// Closes an endpoint at once (forced), progressing `worker` for up to a second meanwhile.
void close_endpoint(ucp_worker_h worker, ucp_ep_h ep);

}  // namespace cohort::tl_ucx
