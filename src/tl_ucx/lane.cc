#include "tl_ucx/lane.h"

#include <poll.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/threads.h"
#include "tl_ucx/requests.h"
#include "tl_ucx/ucp_setup.h"

namespace cohort::tl_ucx {
namespace {

// How long an idle lane's thread sleeps at most between looks at its worker (UCX's keepalive
// and a peer's connection requests are served at least this often).
constexpr int kIdleWaitMs = 100;

Status lane_failure(int index, const char *call, ucs_status_t status) {
  return failf(COHORT_ERR_SYSTEM, "UCX %s for the wire's lane %d failed: %s", call, index,
               ucs_status_string(status));
}

void on_lane_endpoint_error(void *arg, ucp_ep_h, ucs_status_t status) {
  auto *endpoint = static_cast<LaneEndpoint *>(arg);
  if (!endpoint->failed.exchange(true)) {
    COHORT_LOG_INFO(NET, "UCX: a lane's connection failed: %s", ucs_status_string(status));
  }
}

// An operation's parameters: always a request, ended in `callback` with `op` as user data.
ucp_request_param_t op_param(LaneOp *op) {
  ucp_request_param_t param = {};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.user_data = op;
  return param;
}

}  // namespace

Status Lane::create(int index, const std::string &net_devices, std::unique_ptr<Lane> *out) {
  std::unique_ptr<Lane> lane(new Lane(index));
  Status s = lane->init(net_devices);
  if (is_error(s)) return s;
  lane->thread_ = std::thread([raw = lane.get()] { raw->run(); });
  *out = std::move(lane);
  return COHORT_SUCCESS;
}

Status Lane::init(const std::string &net_devices) {
  UcpParts parts;
  const std::string owner = "the wire's lane " + std::to_string(index_);
  Status s = open_ucp(owner.c_str(), net_devices, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP, &parts);
  context_ = parts.context;
  worker_ = parts.worker;
  address_ = std::move(parts.address);
  if (is_error(s)) return s;
  const ucs_status_t st = ucp_worker_get_efd(worker_, &event_fd_);
  if (st != UCS_OK) return lane_failure(index_, "ucp_worker_get_efd", st);
  return COHORT_SUCCESS;
}

Lane::~Lane() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      if (sleeping_) ucp_worker_signal(worker_);
    }
    thread_.join();
  }
  if (worker_ != nullptr) {
    for (auto &endpoint : all_endpoints_) close_endpoint(worker_, endpoint->ep);
    ucp_worker_destroy(worker_);
  }
  if (context_ != nullptr) ucp_cleanup(context_);
}

// The caller's turn at the worker: the lane's thread, which polls under the mutex, lets a
// waiting caller in between its polls.
std::unique_lock<std::mutex> Lane::lock_to_post() {
  waiting_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(mutex_);
  waiting_.fetch_sub(1, std::memory_order_acq_rel);
  return lock;
}

Status Lane::endpoint(const std::string &address, const std::string &who, LaneEndpoint **out) {
  auto lock = lock_to_post();
  if (auto it = endpoints_.find(address); it != endpoints_.end()) {
    if (!it->second->failed.load()) {
      *out = it->second;
      return COHORT_SUCCESS;
    }
    endpoints_.erase(it);  // its channels keep it, and their failure, until the lane goes
  }
  auto endpoint = std::make_unique<LaneEndpoint>();
  const ucs_status_t st =
      connect_ucp(worker_, address, on_lane_endpoint_error, endpoint.get(), &endpoint->ep);
  if (st != UCS_OK) {
    return failf(COHORT_ERR_SYSTEM, "UCX ucp_ep_create on the wire's lane %d to %s failed: %s",
                 index_, who.c_str(), ucs_status_string(st));
  }
  if (sleeping_) ucp_worker_signal(worker_);  // the connection's wireup needs progress
  endpoints_.emplace(address, endpoint.get());
  *out = endpoint.get();
  all_endpoints_.push_back(std::move(endpoint));
  return COHORT_SUCCESS;
}

void Lane::on_sent(void *request, ucs_status_t status, void *user) {
  auto *op = static_cast<LaneOp *>(user);
  op->lane_->ended(op, request, status);
}

void Lane::on_received(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                       void *user) {
  auto *op = static_cast<LaneOp *>(user);
  if (status == UCS_OK) op->length_ = info->length;
  op->lane_->ended(op, request, status);
}

// In UCX's callback, on the lane's thread under the mutex.  The status goes last: the owner
// may free the operation as soon as it sees it.
void Lane::ended(LaneOp *op, void *request, ucs_status_t status) {
  op->request_ = nullptr;
  ucp_request_free(request);
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  op->status_.store(status, std::memory_order_release);
}

// After ucp_*_nbx under the mutex, the operation counted in flight before it.  UCX may have
// run the callback already, inside the call (NO_IMM_CMPL allows it): then the request is gone.
ucs_status_t Lane::posted(void *request, LaneOp *op) {
  if (UCS_PTR_IS_ERR(request)) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    op->status_.store(UCS_PTR_STATUS(request), std::memory_order_release);
    return UCS_PTR_STATUS(request);
  }
  if (!op->done()) op->request_ = request;
  if (sleeping_) ucp_worker_signal(worker_);
  return UCS_OK;
}

ucs_status_t Lane::send(LaneEndpoint *to, const void *data, size_t bytes, ucp_tag_t tag,
                        LaneOp *op) {
  op->lane_ = this;
  op->status_.store(UCS_INPROGRESS, std::memory_order_relaxed);
  ucp_request_param_t param = op_param(op);
  param.cb.send = on_sent;
  auto lock = lock_to_post();
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  return posted(ucp_tag_send_nbx(to->ep, data, bytes, tag, &param), op);
}

ucs_status_t Lane::receive(void *data, size_t bytes, ucp_tag_t tag, LaneOp *op) {
  op->lane_ = this;
  op->length_ = 0;
  op->status_.store(UCS_INPROGRESS, std::memory_order_relaxed);
  ucp_request_param_t param = op_param(op);
  param.cb.recv = on_received;
  auto lock = lock_to_post();
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  return posted(ucp_tag_recv_nbx(worker_, data, bytes, tag, kFullMask, &param), op);
}

bool Lane::settle(LaneOp *op, bool cancel, int64_t deadline) {
  if (op->done()) return true;
  if (cancel) {
    auto lock = lock_to_post();
    if (op->request_ != nullptr) ucp_request_cancel(worker_, op->request_);
  }
  Backoff backoff;
  while (!op->done() && now_ns() < deadline) backoff.pause();  // the lane's thread ends it
  return op->done();
}

// The lane's thread: polls the worker while an operation of its own is in flight (backing off
// as a waiting caller does), and otherwise sleeps until the wire or a caller wakes it.
void Lane::run() {
  spread_this_thread();
  name_this_thread(("cohort-lane-" + std::to_string(index_)).c_str());
  Backoff backoff;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (ucp_worker_progress(worker_) != 0) {
      backoff.reset();
    } else if (in_flight_.load(std::memory_order_relaxed) == 0) {
      sleep(lock);
      backoff.reset();
      continue;
    } else {
      lock.unlock();
      backoff.pause();
      lock.lock();
      continue;
    }
    if (waiting_.load(std::memory_order_acquire) > 0) {
      lock.unlock();
      while (waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
      lock.lock();
    }
  }
}

// Arms the worker's event descriptor and waits on it (bounded), the mutex released; a caller
// who posts meanwhile signals the worker.
void Lane::sleep(std::unique_lock<std::mutex> &lock) {
  const ucs_status_t st = ucp_worker_arm(worker_);
  if (st == UCS_ERR_BUSY) return;  // events pending: poll again
  sleeping_ = true;
  lock.unlock();
  if (st == UCS_OK) {
    pollfd fd = {event_fd_, POLLIN, 0};
    poll(&fd, 1, kIdleWaitMs);
  } else {
    timespec pause{0, 100 * 1000};  // no wakeup here: look again soon
    nanosleep(&pause, nullptr);
  }
  lock.lock();
  sleeping_ = false;
}

}  // namespace cohort::tl_ucx
