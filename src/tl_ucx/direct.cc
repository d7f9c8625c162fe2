#include "tl_ucx/direct.h"

#include <algorithm>

#include "core/clock.h"
#include "core/log.h"

namespace cohort::tl_ucx {
namespace {

constexpr size_t kFragmentUnit = 64 * 1024;
constexpr size_t kMinFragment = 256 * 1024;

// The lane of the fragment that starts at byte `offset` of a message cut into fragments of
// `fragment` bytes, over `lanes` lanes: both ends compute it alike, so a fragment's send and
// receive meet on one lane.
size_t lane_of(size_t offset, size_t fragment, size_t lanes) { return offset / fragment % lanes; }

// Lets go of fragments at teardown; returns how many UCX may still use (their operations and
// buffers are then left to it: released, never freed).
template <typename Fragments, typename Keep>
int let_go_all(Fragments &fragments, bool cancel, Keep keep) {
  const int64_t deadline = deadline_after(1.0);
  int left = 0;
  for (auto &f : fragments) {
    if (f.op == nullptr || f.lane->settle(f.op.get(), cancel, deadline)) continue;
    ++left;
    (void)f.op.release();
    keep(f);
  }
  return left;
}

}  // namespace

size_t fragment_bytes(size_t bytes, size_t max) {
  const size_t eighth = (bytes / 8 + kFragmentUnit - 1) / kFragmentUnit * kFragmentUnit;
  return std::clamp(eighth, std::min(kMinFragment, max), max);
}

DirectSender::~DirectSender() {
  const int left = let_go_all(fragments_, false, [](Fragment &) {});
  if (left > 0) {
    COHORT_LOG_WARN(NET, "UCX: %d direct sends (tag %#llx) still in flight at teardown after 1 s",
                    left, static_cast<unsigned long long>(tag_));
  }
}

void DirectSender::start(const void *data, size_t bytes) {
  data_ = static_cast<const char *>(data);
  bytes_ = bytes;
  fragment_ = fragment_bytes(bytes, fragment_max_);
  posted_ = done_ = 0;
}

bool DirectSender::progress(ucs_status_t *error) {
  while (!fragments_.empty() && fragments_.front().op->done()) {
    const ucs_status_t st = fragments_.front().op->status();
    if (st != UCS_OK) *error = st;
    done_ += fragments_.front().bytes;
    fragments_.pop_front();
  }
  while (posted_ < bytes_ && fragments_.size() < kSendFragmentsInFlight && *error == UCS_OK) {
    const LaneLink &link = lanes_[lane_of(posted_, fragment_, lanes_.size())];
    Fragment f{std::make_unique<LaneOp>(), link.lane, std::min(fragment_, bytes_ - posted_)};
    const ucs_status_t st = link.lane->send(link.to, data_ + posted_, f.bytes, tag_, f.op.get());
    if (st != UCS_OK) {
      *error = st;
      break;
    }
    posted_ += f.bytes;
    fragments_.push_back(std::move(f));
  }
  return done_ == bytes_;
}

DirectReceiver::DirectReceiver(std::vector<Lane *> lanes, ucp_tag_t tag, size_t fragment_max)
    : lanes_(std::move(lanes)),
      tag_(tag),
      fragment_max_(fragment_max),
      buffer_count_(std::clamp(kReceiveBuffersPerLane * static_cast<int>(lanes_.size()),
                               kMinReceiveBuffers, kMaxReceiveBuffers)) {}

DirectReceiver::~DirectReceiver() {
  const int left = let_go_all(fragments_, true, [this](Fragment &f) {
    if (f.buffer >= 0) (void)buffers_[f.buffer].release();  // UCX may still write it
  });
  if (left > 0) {
    COHORT_LOG_WARN(NET,
                    "UCX: %d direct receives (tag %#llx) still in flight at teardown after 1 s",
                    left, static_cast<unsigned long long>(tag_));
  }
}

void DirectReceiver::start(void *landing, size_t bytes) {
  landing_ = static_cast<char *>(landing);
  bytes_ = bytes;
  fragment_ = fragment_bytes(bytes, fragment_max_);
  posted_ = 0;
  if (landing_ == nullptr && buffer_bytes_ < std::min(fragment_, bytes_)) {
    buffers_.clear();  // every buffer is free between messages
    free_buffers_.clear();
    buffer_bytes_ = std::min(fragment_, bytes_);
  }
}

void DirectReceiver::post_more(ucs_status_t *error) {
  const size_t limit = landing_ != nullptr ? kSendFragmentsInFlight : buffer_count_;
  while (posted_ < bytes_ && fragments_.size() < limit) {
    Fragment f;
    f.op = std::make_unique<LaneOp>();
    f.lane = lanes_[lane_of(posted_, fragment_, lanes_.size())];
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
    const ucs_status_t st = f.lane->receive(f.at, f.bytes, tag_, f.op.get());
    if (st != UCS_OK) {
      *error = st;
      if (f.buffer >= 0) free_buffers_.push_back(f.buffer);
      return;
    }
    posted_ += f.bytes;
    fragments_.push_back(std::move(f));
  }
}

const void *DirectReceiver::peek(size_t *bytes, ucs_status_t *error) {
  *bytes = 0;
  post_more(error);
  if (fragments_.empty() || *error != UCS_OK) return nullptr;
  Fragment &head = fragments_.front();
  if (!head.op->done()) return nullptr;
  ucs_status_t st = head.op->status();
  if (st == UCS_OK && head.op->length() != head.bytes) st = UCS_ERR_MESSAGE_TRUNCATED;
  if (st != UCS_OK) {
    *error = st;
    return nullptr;
  }
  *bytes = head.bytes;
  return head.at;
}

void DirectReceiver::consume() {
  if (fragments_.empty() || !fragments_.front().op->done()) return;
  if (fragments_.front().buffer >= 0) free_buffers_.push_back(fragments_.front().buffer);
  fragments_.pop_front();
}

}  // namespace cohort::tl_ucx
