// Direct messages between hosts: a large message goes as tagged messages of its own, straight
// from the sender's span into the receiver's (UCX's rendezvous moves it without a copy through
// Cohort's buffers), cut into fragments with several in flight, so that the wire stays busy
// and a receiver reduces one fragment while the next arrives.  Both ends cut a message of a
// given size alike (fragment_bytes) and post its fragments in order on a tag of their own, on
// which UCX matches them in that order.  Callers hold the worker's mutex.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "tl_ucx/worker.h"

namespace cohort::tl_ucx {

// The fragments of a direct message of `bytes`: an eighth of it, rounded up to 64 KiB, at
// least 256 KiB and at most 4 MiB (the last fragment takes the rest).
size_t fragment_bytes(size_t bytes);

// Fragments a sender keeps in flight, and receive buffers a reducing receiver lands them in.
constexpr int kSendFragmentsInFlight = 16;
constexpr int kReceiveBuffers = 4;

// The sending end: one message at a time.
class DirectSender {
 public:
  DirectSender(Worker &worker, Endpoint &endpoint, ucp_tag_t tag)
      : worker_(worker), endpoint_(endpoint), tag_(tag) {}
  ~DirectSender();
  DirectSender(const DirectSender &) = delete;
  DirectSender &operator=(const DirectSender &) = delete;

  void start(const void *data, size_t bytes);
  // Reaps the fragments UCX finished and posts more; true once the whole message left.  A
  // failed fragment sets *error (UCS_OK stays otherwise).
  bool progress(ucs_status_t *error);
  int in_flight() const { return static_cast<int>(requests_.size()); }

 private:
  Worker &worker_;
  Endpoint &endpoint_;
  ucp_tag_t tag_;
  const char *data_ = nullptr;
  size_t bytes_ = 0, fragment_ = 0, posted_ = 0, done_ = 0;
  struct Fragment {
    void *request;
    size_t bytes;
  };
  std::deque<Fragment> requests_;  // in posting order
};

// The receiving end: one message at a time, landing in the caller's memory or in buffers of
// its own, lent in order.
class DirectReceiver {
 public:
  DirectReceiver(Worker &worker, ucp_tag_t tag) : worker_(worker), tag_(tag) {}
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
    void *request = nullptr;  // UCX's, until it completes
    char *at = nullptr;
    size_t bytes = 0;
    int buffer = -1;  // of buffers_, or -1: in the landing
    bool landed = false;
  };
  void post_more(ucs_status_t *error);

  Worker &worker_;
  ucp_tag_t tag_;
  char *landing_ = nullptr;
  size_t bytes_ = 0, fragment_ = 0, posted_ = 0;
  std::deque<Fragment> fragments_;  // posted, in order
  std::vector<std::unique_ptr<char[]>> buffers_;
  std::vector<int> free_buffers_;
  size_t buffer_bytes_ = 0;
};

}  // namespace cohort::tl_ucx
