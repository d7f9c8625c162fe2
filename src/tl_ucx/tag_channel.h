// Channels between hosts over UCX tag messages, for the host executor (coll/channel.h).  Each
// commit is one message; a team's sender rank and id in the tag keep streams apart, and UCX
// matches messages of one sender and tag in order, so the byte stream stays in order.  Messages
// of at least direct_min() bytes go around the stream as direct messages (direct.h) on a tag
// of their own: no staging copy on either side.
//
// The sender writes into one of a few staging slots and keeps it until UCX is done with it;
// the receiver keeps a few receives posted (slot-sized, so a message always fits) and lends
// the bytes of the oldest completed one.  Neither side blocks: when nothing is free or has
// arrived they progress the worker and lend nothing.  Callers hold the worker's mutex.
//
// A failed transfer, or a failure UCX reports for the peer's endpoint, breaks the channel for
// good: failure() names the peer and the reason, and the collective using it ends with that.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "coll/channel.h"
#include "tl_ucx/direct.h"
#include "tl_ucx/worker.h"

namespace cohort::tl_ucx {

// The largest message: every receive is posted this large.
constexpr size_t kSlotBytes = 64 * 1024;

class SendChannel : public coll::SendChannel {
 public:
  // `tag`: the byte stream's (Stream::kBytes); direct messages go on its Stream::kDirect twin,
  // over `lanes` (Worker::lane_links; none: no direct messages), in the form `direct` (the
  // same at the receiving end).
  SendChannel(Worker &worker, Endpoint &endpoint, ucp_tag_t tag, DirectForm direct = {},
              std::vector<LaneLink> lanes = {}, int slots = 8);
  ~SendChannel() override;
  void *reserve(size_t *bytes) override;
  void commit(size_t bytes) override;
  size_t direct_min() const override { return direct_min_; }
  Status start_direct(const void *data, size_t bytes) override;
  bool direct_sent() override;
  Status failure() const override;
  // Sends still in flight (for tests and for waiting at destruction).
  int in_flight() const;
  // Testing: the endpoint fails as if UCX reported a lost peer once `messages` more were sent
  // (direct ones counted too).
  void fail_after(int messages) { fail_after_ = messages; }

 private:
  struct Slot {
    std::unique_ptr<char[]> data;
    void *request = nullptr;  // UCX's, while the send is in flight
  };
  bool slot_free(Slot &slot);
  void broke(ucs_status_t status);

  Worker &worker_;
  Endpoint &endpoint_;
  ucp_tag_t tag_;
  size_t direct_min_;
  std::vector<Slot> slots_;
  DirectSender direct_;  // declared after slots_: goes first
  size_t next_ = 0;      // the slot reserve() lends
  std::string error_;    // the first failed transfer (the channel is broken from then on)
  int fail_after_ = -1;  // testing: messages until an injected endpoint failure
};

class RecvChannel : public coll::RecvChannel {
 public:
  // `sender`: the endpoint to the sending peer, whose failure breaks this channel (null: none).
  // `lanes`: as many of this process's lanes as the sender uses (none: no direct messages).
  RecvChannel(Worker &worker, ucp_tag_t tag, const Endpoint *sender = nullptr,
              DirectForm direct = {}, std::vector<Lane *> lanes = {}, int posted = 4);
  ~RecvChannel() override;
  const void *peek(size_t *bytes) override;
  void consume(size_t bytes) override;
  size_t direct_min() const override { return direct_min_; }
  Status start_direct(void *landing, size_t bytes) override;
  const void *peek_direct(size_t *bytes) override;
  void consume_direct(size_t bytes) override;
  Status failure() const override;

 private:
  struct Slot {
    std::unique_ptr<char[]> data;
    void *request = nullptr;  // UCX's, while posted and not yet complete
    size_t length = 0;        // bytes received, once complete
    size_t consumed = 0;
    bool posted = false;
  };
  void post(Slot &slot);
  bool complete(Slot &slot);
  void broke(ucs_status_t status);
  void repost_head();

  Worker &worker_;
  ucp_tag_t tag_;
  const Endpoint *sender_;
  size_t direct_min_;
  std::vector<Slot> slots_;  // posted in ring order: matched in that order
  DirectReceiver direct_;
  size_t head_ = 0;    // the oldest posted slot
  std::string error_;  // the first failed receive (the channel is broken from then on)
};

}  // namespace cohort::tl_ucx
