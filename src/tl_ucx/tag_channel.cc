#include "tl_ucx/tag_channel.h"

#include <cassert>
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "tl_ucx/requests.h"

namespace cohort::tl_ucx {
namespace {

// Frees the buffers UCX is done with; the others are left (and counted) so nothing is freed
// under a transfer.
template <typename Slot>
void let_go_all(Worker &worker, std::vector<Slot> &slots, bool cancel, ucp_tag_t tag) {
  int64_t deadline = deadline_after(1.0);
  int left = 0;
  for (Slot &slot : slots) {
    if (let_go(worker, slot.request, cancel, deadline)) continue;
    (void)slot.data.release();
    ++left;
  }
  if (left > 0) {
    COHORT_LOG_WARN(COLL,
                    "UCX: %d %s (tag %#llx) still in flight at teardown after 1 s: their buffers "
                    "(%zu bytes each) are left to UCX",
                    left, cancel ? "receives" : "sends", static_cast<unsigned long long>(tag),
                    kSlotBytes);
  }
}

}  // namespace

namespace {
// The direct stream's tag: the byte stream's with the stream bit set.
ucp_tag_t direct_tag(ucp_tag_t tag) {
  return tag | (static_cast<ucp_tag_t>(Stream::kDirect) << kTagStreamShift);
}
}  // namespace

SendChannel::SendChannel(Worker &worker, Endpoint &endpoint, ucp_tag_t tag, DirectForm direct,
                         std::vector<LaneLink> lanes, int slots)
    : worker_(worker),
      endpoint_(endpoint),
      tag_(tag),
      direct_min_(lanes.empty() ? 0 : direct.min),
      slots_(slots),
      direct_(std::move(lanes), direct_tag(tag), direct.fragment_max) {}

SendChannel::~SendChannel() { let_go_all(worker_, slots_, false, tag_); }

bool SendChannel::slot_free(Slot &slot) {
  if (slot.request == nullptr) return true;
  ucs_status_t st = ucp_request_check_status(slot.request);
  if (st == UCS_INPROGRESS) return false;
  if (st != UCS_OK) broke(st);
  ucp_request_free(slot.request);
  slot.request = nullptr;
  return true;
}

void SendChannel::broke(ucs_status_t status) {
  if (!error_.empty()) return;
  error_ = strprintf("UCX send to %s (tag %#llx) failed: %s", endpoint_.who.c_str(),
                     static_cast<unsigned long long>(tag_), ucs_status_string(status));
  COHORT_LOG_WARN(NET, "%s", error_.c_str());
}

Status SendChannel::failure() const {
  if (!error_.empty()) return fail(COHORT_ERR_SYSTEM, error_);
  return endpoint_.failure();
}

void *SendChannel::reserve(size_t *bytes) {
  *bytes = 0;
  if (!error_.empty() || endpoint_.status != UCS_OK) return nullptr;
  Slot &slot = slots_[next_];
  if (!slot_free(slot)) {
    worker_.progress();
    if (!slot_free(slot)) {
      *bytes = 0;
      return nullptr;
    }
  }
  if (!slot.data) slot.data.reset(new char[kSlotBytes]);
  *bytes = kSlotBytes;
  return slot.data.get();
}

void SendChannel::commit(size_t bytes) {
  if (bytes == 0) return;
  Slot &slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  param.cb.send = nop_send;
  void *request = ucp_tag_send_nbx(endpoint_.ep, slot.data.get(), bytes, tag_, &param);
  if (UCS_PTR_IS_ERR(request)) {
    broke(UCS_PTR_STATUS(request));
    return;
  }
  slot.request = request;  // null: done already (the data was copied out)
  if (fail_after_ > 0 && --fail_after_ == 0) endpoint_.fail(UCS_ERR_CONNECTION_RESET);
}

Status SendChannel::start_direct(const void *data, size_t bytes) {
  if (!error_.empty() || endpoint_.status != UCS_OK) return failure();
  direct_.start(data, bytes);
  if (fail_after_ > 0 && --fail_after_ == 0) endpoint_.fail(UCS_ERR_CONNECTION_RESET);
  return COHORT_SUCCESS;
}

bool SendChannel::direct_sent() {
  if (!error_.empty()) return false;
  ucs_status_t error = UCS_OK;
  const bool sent = direct_.progress(&error);  // the lanes' threads move it
  if (error != UCS_OK) broke(error);
  return sent && error == UCS_OK;
}

int SendChannel::in_flight() const {
  int n = direct_.in_flight();
  for (const Slot &slot : slots_) {
    n += slot.request != nullptr && ucp_request_check_status(slot.request) == UCS_INPROGRESS;
  }
  return n;
}

RecvChannel::RecvChannel(Worker &worker, ucp_tag_t tag, const Endpoint *sender, DirectForm direct,
                         std::vector<Lane *> lanes, int posted)
    : worker_(worker),
      tag_(tag),
      sender_(sender),
      direct_min_(lanes.empty() ? 0 : direct.min),
      slots_(posted),
      direct_(std::move(lanes), direct_tag(tag), direct.fragment_max) {}

void RecvChannel::broke(ucs_status_t status) {
  if (!error_.empty()) return;
  error_ = strprintf("UCX receive from %s (tag %#llx) failed: %s",
                     sender_ != nullptr ? sender_->who.c_str() : "a peer",
                     static_cast<unsigned long long>(tag_), ucs_status_string(status));
  COHORT_LOG_WARN(NET, "%s", error_.c_str());
}

Status RecvChannel::failure() const {
  if (!error_.empty()) return fail(COHORT_ERR_SYSTEM, error_);
  return sender_ != nullptr ? sender_->failure() : COHORT_SUCCESS;
}

RecvChannel::~RecvChannel() { let_go_all(worker_, slots_, true, tag_); }

void RecvChannel::post(Slot &slot) {
  if (!slot.data) slot.data.reset(new char[kSlotBytes]);
  // Always a request (no immediate completion): its test gives the length in every protocol.
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = nop_recv;
  void *request =
      ucp_tag_recv_nbx(worker_.handle(), slot.data.get(), kSlotBytes, tag_, kFullMask, &param);
  slot.consumed = 0;
  slot.length = 0;
  if (UCS_PTR_IS_ERR(request)) {
    broke(UCS_PTR_STATUS(request));
    slot.posted = false;
    slot.request = nullptr;
    return;
  }
  slot.posted = true;
  slot.request = request;
}

// True once the slot's message is in (its length known).
bool RecvChannel::complete(Slot &slot) {
  if (!slot.posted) return false;
  if (slot.request == nullptr) return true;
  ucp_tag_recv_info_t info = {};
  ucs_status_t st = ucp_tag_recv_request_test(slot.request, &info);
  if (st == UCS_INPROGRESS) return false;
  ucp_request_free(slot.request);
  slot.request = nullptr;
  if (st != UCS_OK) {
    broke(st);  // the stream has a hole now: the channel is broken for good
    return false;
  }
  slot.length = info.length;
  return true;
}

const void *RecvChannel::peek(size_t *bytes) {
  *bytes = 0;
  if (!error_.empty()) return nullptr;
  // Receives are posted at first use, then re-posted as each slot is drained.
  for (Slot &slot : slots_) {
    if (!slot.posted) post(slot);
  }
  Slot &slot = slots_[head_];
  if (!complete(slot)) {
    worker_.progress();
    if (!complete(slot)) return nullptr;
  }
  *bytes = slot.length - slot.consumed;
  return slot.data.get() + slot.consumed;
}

void RecvChannel::consume(size_t bytes) {
  // Nothing to give back when nothing was lent: the head may still be in flight, and
  // re-posting it would orphan UCX's request and lose the message it matches.
  if (bytes == 0) return;
  Slot &slot = slots_[head_];
  assert(slot.posted && slot.request == nullptr && "consume() of a receive not yet complete");
  slot.consumed += bytes;
  assert(slot.consumed <= slot.length && "consume() of more than peek() lent");
  if (slot.consumed == slot.length) repost_head();
}

Status RecvChannel::start_direct(void *landing, size_t bytes) {
  if (!error_.empty()) return failure();
  direct_.start(landing, bytes);
  return COHORT_SUCCESS;
}

const void *RecvChannel::peek_direct(size_t *bytes) {
  *bytes = 0;
  if (!error_.empty()) return nullptr;
  ucs_status_t error = UCS_OK;
  const void *piece = direct_.peek(bytes, &error);
  if (error != UCS_OK) broke(error);
  return piece;
}

void RecvChannel::consume_direct(size_t bytes) {
  if (bytes > 0) direct_.consume();
}

void RecvChannel::repost_head() {
  Slot &slot = slots_[head_];
  slot.posted = false;
  post(slot);  // back at the end of the ring: receives match in posting order
  head_ = (head_ + 1) % slots_.size();
}

}  // namespace cohort::tl_ucx
