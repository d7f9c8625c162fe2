#include "tl_ucx/direct.h"

#include <algorithm>

#include "core/clock.h"
#include "core/log.h"
#include "tl_ucx/requests.h"

namespace cohort::tl_ucx {
namespace {

constexpr size_t kFragmentUnit = 64 * 1024;
constexpr size_t kMinFragment = 256 * 1024;
constexpr size_t kMaxFragment = 4 * 1024 * 1024;

}  // namespace

size_t fragment_bytes(size_t bytes) {
  const size_t eighth = (bytes / 8 + kFragmentUnit - 1) / kFragmentUnit * kFragmentUnit;
  return std::clamp(eighth, kMinFragment, kMaxFragment);
}

DirectSender::~DirectSender() {
  const int64_t deadline = deadline_after(1.0);
  int left = 0;
  for (const Fragment &f : requests_) left += let_go(worker_, f.request, false, deadline) ? 0 : 1;
  if (left > 0) {
    COHORT_LOG_WARN(NET, "UCX: %d direct sends to %s still in flight at teardown after 1 s", left,
                    endpoint_.who.c_str());
  }
}

void DirectSender::start(const void *data, size_t bytes) {
  data_ = static_cast<const char *>(data);
  bytes_ = bytes;
  fragment_ = fragment_bytes(bytes);
  posted_ = done_ = 0;
}

bool DirectSender::progress(ucs_status_t *error) {
  while (!requests_.empty()) {
    const ucs_status_t st = ucp_request_check_status(requests_.front().request);
    if (st == UCS_INPROGRESS) break;
    ucp_request_free(requests_.front().request);
    if (st != UCS_OK) *error = st;
    done_ += requests_.front().bytes;
    requests_.pop_front();
  }
  while (posted_ < bytes_ && requests_.size() < kSendFragmentsInFlight && *error == UCS_OK) {
    const size_t n = std::min(fragment_, bytes_ - posted_);
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.send = nop_send;
    void *request = ucp_tag_send_nbx(endpoint_.ep, data_ + posted_, n, tag_, &param);
    if (UCS_PTR_IS_ERR(request)) {
      *error = UCS_PTR_STATUS(request);
      break;
    }
    posted_ += n;
    if (request == nullptr) {
      done_ += n;  // sent already
    } else {
      requests_.push_back({request, n});
    }
  }
  return done_ == bytes_;
}

DirectReceiver::~DirectReceiver() {
  const int64_t deadline = deadline_after(1.0);
  int left = 0;
  for (Fragment &f : fragments_) {
    if (let_go(worker_, f.request, true, deadline)) continue;
    ++left;
    if (f.buffer >= 0) (void)buffers_[f.buffer].release();  // UCX may still write it
  }
  if (left > 0) {
    COHORT_LOG_WARN(NET,
                    "UCX: %d direct receives (tag %#llx) still in flight at teardown after 1 s",
                    left, static_cast<unsigned long long>(tag_));
  }
}

void DirectReceiver::start(void *landing, size_t bytes) {
  landing_ = static_cast<char *>(landing);
  bytes_ = bytes;
  fragment_ = fragment_bytes(bytes);
  posted_ = 0;
  if (landing_ == nullptr && buffer_bytes_ < std::min(fragment_, bytes_)) {
    buffers_.clear();  // every buffer is free between messages
    free_buffers_.clear();
    buffer_bytes_ = std::min(fragment_, bytes_);
  }
}

void DirectReceiver::post_more(ucs_status_t *error) {
  const size_t limit = landing_ != nullptr ? kSendFragmentsInFlight : kReceiveBuffers;
  while (posted_ < bytes_ && fragments_.size() < limit) {
    Fragment f;
    f.bytes = std::min(fragment_, bytes_ - posted_);
    if (landing_ != nullptr) {
      f.at = landing_ + posted_;
    } else {
      if (free_buffers_.empty()) {
        buffers_.emplace_back(new char[buffer_bytes_]);
        free_buffers_.push_back(static_cast<int>(buffers_.size()) - 1);
      }
      f.buffer = free_buffers_.back();
      free_buffers_.pop_back();
      f.at = buffers_[f.buffer].get();
    }
    // Always a request (no immediate completion): its test gives the status in every protocol.
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = nop_recv;
    f.request = ucp_tag_recv_nbx(worker_.handle(), f.at, f.bytes, tag_, kFullMask, &param);
    if (UCS_PTR_IS_ERR(f.request)) {
      *error = UCS_PTR_STATUS(f.request);
      if (f.buffer >= 0) free_buffers_.push_back(f.buffer);
      return;
    }
    posted_ += f.bytes;
    fragments_.push_back(f);
  }
}

const void *DirectReceiver::peek(size_t *bytes, ucs_status_t *error) {
  *bytes = 0;
  post_more(error);
  if (fragments_.empty() || *error != UCS_OK) return nullptr;
  Fragment &head = fragments_.front();
  if (!head.landed) {
    ucp_tag_recv_info_t info = {};
    ucs_status_t st = ucp_tag_recv_request_test(head.request, &info);
    if (st == UCS_INPROGRESS) {
      worker_.progress();
      st = ucp_tag_recv_request_test(head.request, &info);
      if (st == UCS_INPROGRESS) return nullptr;
    }
    ucp_request_free(head.request);
    head.request = nullptr;
    if (st == UCS_OK && info.length != head.bytes) st = UCS_ERR_MESSAGE_TRUNCATED;
    if (st != UCS_OK) {
      *error = st;
      return nullptr;
    }
    head.landed = true;
  }
  *bytes = head.bytes;
  return head.at;
}

void DirectReceiver::consume() {
  if (fragments_.empty() || !fragments_.front().landed) return;
  if (fragments_.front().buffer >= 0) free_buffers_.push_back(fragments_.front().buffer);
  fragments_.pop_front();
}

}  // namespace cohort::tl_ucx
