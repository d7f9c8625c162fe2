// Direct messages between hosts: a large message goes as tagged messages of its own, straight
// from the sender's span into the receiver's (UCX's rendezvous moves it without a copy through
// Cohort's buffers), cut into fragments with several in flight, so that the wire stays busy
// and a receiver reduces one fragment while the next arrive.  The fragments take the wire's
// lanes in turn (lane.h: fragment i on lane i mod n), so n threads move them side by side.
// Both ends cut a message of a given size alike (fragment_bytes) and use as many lanes, and
// post its fragments in order on a tag of their own, on which each lane's worker matches them
// in that order.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tl_ucx/lane.h"

namespace cohort::tl_ucx {

// The largest fragment by default (COHORT_UCX_FRAGMENT_BYTES).
constexpr size_t kDefaultFragmentMax = 4 * 1024 * 1024;

// The fragments of a direct message of `bytes`: an eighth of it, rounded up to 64 KiB, at
// least 256 KiB (or `max`, where smaller) and at most `max` (the last fragment takes the rest).
size_t fragment_bytes(size_t bytes, size_t max = kDefaultFragmentMax);

// How a channel's large messages go: direct from `min` bytes (0: never), in fragments of at
// most `fragment_max`.  Both ends of a channel must use the same.
struct DirectForm {
  size_t min = 0;
  size_t fragment_max = kDefaultFragmentMax;
};

// Fragments a sender keeps in flight, and receive buffers a reducing receiver lands them in
// (per lane, from kMinReceiveBuffers to kMaxReceiveBuffers).
constexpr int kSendFragmentsInFlight = 16;
constexpr int kReceiveBuffersPerLane = 2;
constexpr int kMinReceiveBuffers = 4;
constexpr int kMaxReceiveBuffers = 8;

// The sending end: one message at a time, over `lanes` (at least one) to one peer.
class DirectSender {
 public:
  DirectSender(std::vector<LaneLink> lanes, ucp_tag_t tag, size_t fragment_max)
      : lanes_(std::move(lanes)), tag_(tag), fragment_max_(fragment_max) {}
  ~DirectSender();
  DirectSender(const DirectSender &) = delete;
  DirectSender &operator=(const DirectSender &) = delete;

  void start(const void *data, size_t bytes);
  // Reaps the fragments the lanes finished and posts more; true once the whole message left.
  // A failed fragment sets *error (UCS_OK stays otherwise).
  bool progress(ucs_status_t *error);
  int in_flight() const { return static_cast<int>(fragments_.size()); }

 private:
  struct Fragment {
    std::unique_ptr<LaneOp> op;
    Lane *lane;
    size_t bytes;
  };

  std::vector<LaneLink> lanes_;
  ucp_tag_t tag_;
  size_t fragment_max_;
  const char *data_ = nullptr;
  size_t bytes_ = 0, fragment_ = 0, posted_ = 0, done_ = 0;
  std::deque<Fragment> fragments_;  // in posting order
};

// The receiving end: one message at a time, over `lanes` (at least one, as many as the
// sender's), landing in the caller's memory or in buffers of its own, lent in order.
class DirectReceiver {
 public:
  DirectReceiver(std::vector<Lane *> lanes, ucp_tag_t tag, size_t fragment_max);
  ~DirectReceiver();
  DirectReceiver(const DirectReceiver &) = delete;
  DirectReceiver &operator=(const DirectReceiver &) = delete;

  void start(void *landing, size_t bytes);
  // The next fragment in order once it landed (nullptr: not yet, or a receive failed: then
  // *error says why).
  const void *peek(size_t *bytes, ucs_status_t *error);
  // Gives the fragment peek() lent back and posts the next.
  void consume();

 private:
  struct Fragment {
    std::unique_ptr<LaneOp> op;
    Lane *lane = nullptr;
    char *at = nullptr;
    size_t bytes = 0;
    int buffer = -1;  // of buffers_, or -1: in the landing
  };
  void post_more(ucs_status_t *error);

  std::vector<Lane *> lanes_;
  ucp_tag_t tag_;
  size_t fragment_max_;
  int buffer_count_;
  char *landing_ = nullptr;
  size_t bytes_ = 0, fragment_ = 0, posted_ = 0;
  std::deque<Fragment> fragments_;  // posted, in order
  std::vector<std::unique_ptr<char[]>> buffers_;
  std::vector<int> free_buffers_;
  size_t buffer_bytes_ = 0;
};

}  // namespace cohort::tl_ucx
