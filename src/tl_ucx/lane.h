// The wire's lanes: direct messages between hosts (direct.h) move on several UCX workers at
// once, each driven by a thread of its own, so that one rank's large transfers use several
// cores.  Over TCP every byte costs a copy into or out of the kernel at each end, and one
// thread that does a rank's sends, receives and reductions tops out far below the wire: on an
// H100 machine (2 fake hosts, one rank each) the rank's thread was busy 100% of the time with
// 64 MB allreduces at 1.5 GB/s where one direction of the wire alone moves 5 GB/s.
//
// A lane is a UCX context and worker of its own (with UCX's wakeup feature: its thread sleeps
// on the worker's event descriptor while no operation of its own is in flight) and a thread
// that progresses it.  Callers post operations under the lane's mutex and poll the operation
// for its end, which the lane's thread sets in UCX's callback; callers never progress a lane.
// A lane's endpoints reach the lane of the same index in the peer's process.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace cohort::tl_ucx {

class Lane;

// One send or receive on a lane.  It must stay where it is until done() (or until
// Lane::settle returned true); one that never ended by then is left to UCX for good.
class LaneOp {
 public:
  // Never posted, or ended (UCX's callback ran): status() is final.
  bool done() const { return status_.load(std::memory_order_acquire) != UCS_INPROGRESS; }
  ucs_status_t status() const { return status_.load(std::memory_order_acquire); }
  // The bytes a receive took, once done().
  size_t length() const { return length_; }

 private:
  friend class Lane;
  std::atomic<ucs_status_t> status_{UCS_OK};
  size_t length_ = 0;
  void *request_ = nullptr;  // UCX's while in flight (the lane's mutex guards it)
  Lane *lane_ = nullptr;
};

// A connection from a lane to a peer's lane.  It lives as long as its lane.
struct LaneEndpoint {
  ucp_ep_h ep = nullptr;
  std::atomic<bool> failed{false};  // UCX reported the peer lost: the next team makes another
};

class Lane {
 public:
  // Lane `index` of a process (named in logs), on `net_devices` (UCX_NET_DEVICES' value;
  // empty: UCX's choice).
  static Status create(int index, const std::string &net_devices, std::unique_ptr<Lane> *out);
  ~Lane();  // stops the thread; operations still in flight are left to UCX
  Lane(const Lane &) = delete;
  Lane &operator=(const Lane &) = delete;

  const std::string &address() const { return address_; }
  // The endpoint to the peer's lane at `address` (made on first use, and again once it failed).
  Status endpoint(const std::string &address, const std::string &who, LaneEndpoint **out);
  // Posts a tagged send or receive; UCS_OK, or why UCX refused it (then `op` is done with that
  // status).  `data` stays untouched (send) or unread (receive) until op->done().
  ucs_status_t send(LaneEndpoint *to, const void *data, size_t bytes, ucp_tag_t tag, LaneOp *op);
  ucs_status_t receive(void *data, size_t bytes, ucp_tag_t tag, LaneOp *op);
  // Ends `op` at teardown: a receive is cancelled (`cancel`), a send given until `deadline`.
  // False if UCX may still use its buffer, which the caller must then leave to it.
  bool settle(LaneOp *op, bool cancel, int64_t deadline);
  // Operations posted and not yet ended (tests).
  int in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  explicit Lane(int index) : index_(index) {}
  Status init(const std::string &net_devices);
  void run();
  void sleep(std::unique_lock<std::mutex> &lock);
  std::unique_lock<std::mutex> lock_to_post();
  ucs_status_t posted(void *request, LaneOp *op);
  static void on_sent(void *request, ucs_status_t status, void *user);
  static void on_received(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                          void *user);
  void ended(LaneOp *op, void *request, ucs_status_t status);

  const int index_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::string address_;
  std::mutex mutex_;               // every use of the worker
  std::atomic<int> waiting_{0};    // callers about to take mutex_: the thread lets them in
  std::atomic<int> in_flight_{0};  // operations posted and not ended
  bool sleeping_ = false;          // the thread waits on event_fd_ (mutex_ guards it)
  bool stop_ = false;              // mutex_ guards it
  std::map<std::string, LaneEndpoint *> endpoints_;           // the live one per address
  std::vector<std::unique_ptr<LaneEndpoint>> all_endpoints_;  // failed ones too
  std::thread thread_;
};

// A lane and the endpoint on it to one peer's lane: what a direct sender posts on.
struct LaneLink {
  Lane *lane = nullptr;
  LaneEndpoint *to = nullptr;
};

}  // namespace cohort::tl_ucx
