// The collective front end of a team: checks each call, picks its algorithm from the
// selection table (by collective, memory kind, size, team shape), queues it, and runs the
// queue over the team's transports; a collective that stalls, breaks or learns that a peer
// aborted ends with a named error, and the team then runs no more.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coll/select.h"
#include "core/cuda_driver.h"
#include "team/coll_request.h"
#include "team/staged_plan.h"
#include "team/staging.h"
#include "team/team_info.h"
#include "team/transport_set.h"
#include "tl/device_transport.h"

namespace cohort {

// A v-variant's arrays as the caller passed them (read during the call only), in elements.
struct VArrays {
  const size_t *send_counts = nullptr;
  const size_t *send_displs = nullptr;
  const size_t *recv_counts = nullptr;
  const size_t *recv_displs = nullptr;
};

// One collective call as cohort.h takes it: the call record (coll/call.h), and a v-variant's
// arrays, which only the checks read (they copy them into the schedule's layouts).
struct CollCall : coll::Call {
  VArrays arrays{};  // v-variants; `count` is gatherv's sendcount, scatterv's recvcount
  // A _stream call: its buffers must be device memory (checked with the call's others).
  bool stream_ordered = false;
};

// No process can hold a buffer this large (2^56 bytes: the user address space of 5-level
// paging), so a count that needs one is a wrong count, refused before it is used.
constexpr size_t kMaxBufferBytes = size_t{1} << 56;

// COHORT_ERR_INVALID_ARG naming `count` (in `what`) when `count` elements of `elem` bytes,
// `blocks` times over, wrap size_t or exceed any address space (coll_checks.cc).
Status check_count(const char *what, size_t count, size_t elem, size_t blocks);

// COHORT_ERR_INVALID_ARG naming `which` buffer of `what` when it is device memory of another
// GPU than the team's on this rank (`device`; -1: the rank has none, nothing to check).
Status check_on_team_gpu(const char *what, const char *which, BufferPlace place, int device);

// COHORT_ERR_INVALID_ARG naming `which` buffer of the stream-ordered call `what` when it is
// not device memory (cohort.h); `blocking` names the call that takes host memory.
Status check_stream_buffer(const char *what, const char *which, BufferPlace place,
                           const char *blocking);

// A v-variant's checks past the common ones (coll_checks_v.cc): its arrays, the buffers they
// need, in place; fills args' layouts, count and in_place.
Status check_vcall(const CollCall &call, coll::CollArgs *args);

// One piece's host collective of a call through host memory (coll_staged.cc).
struct StagedRun {
  CollCall call;
  coll::CollArgs args;
  const coll::SelectRule *rule = nullptr;
  std::shared_ptr<CollRequest> request;
};

class StagedReplay;
struct ReplayHub;

class CollFront {
 public:
  CollFront(const TeamInfo &info, TransportSet &transports,
            const std::unique_ptr<tl::DeviceTransport> &device)
      : info_(info), transports_(transports), device_(device) {}
  ~CollFront();  // the progress engine lets go of it first
  CollFront(const CollFront &) = delete;
  CollFront &operator=(const CollFront &) = delete;

  // Connect phase: COHORT_COLL_ALGO, COHORT_TUNING_FILE, COHORT_COLL_TIMEOUT and how long to
  // poll before yielding.
  Status configure();
  // The settings every rank must share ("COHORT_COLL_ALGO='...'", the tuning file's text hash),
  // for the team's hash.
  std::string settings() const;
  const coll::Selection &selection() const { return selection_; }

  // Blocking, or posted (it runs after the team's earlier requests as test/wait progress it).
  Status run(const CollCall &call);
  Status post(const CollCall &call, std::shared_ptr<CollRequest> *out);
  // Stream-ordered, device memory only: enqueues the collective on `stream` (a cudaStream_t;
  // null: CUDA's default stream) and returns (coll_device.cc).
  Status enqueue(const CollCall &call, void *stream);
  // cohort_mem_register / cohort_mem_deregister, collective (coll_register.cc): *slot names
  // the registration, the same on every rank.
  Status register_buffer(void *buffer, size_t bytes, int *slot);
  Status deregister_buffer(int slot);
  // The registration cache (coll_register.cc, tl_gpu/cache_sync.h): a call's use of a device
  // buffer (true: its allocation is registered), whether this rank has something for the next
  // sync, and the sync itself, collective.
  bool note_cached(const void *buffer, size_t bytes);
  bool cache_wanted();
  Status sync_cache();
  // Send/recv groups (coll_p2p.cc): each operation is checked when called (which marks the
  // ones on device memory); a group's checked operations are posted as one request.  A group
  // on device memory or on streams runs through host memory (coll_p2p_staged.cc); a
  // stream-ordered group is only enqueued (*out stays null: nothing to wait for).
  Status check_p2p(P2POp *op) const;
  Status post_p2p(const std::vector<P2POp> &ops, std::shared_ptr<CollRequest> *out);
  // After a posted group's request ended: the copies of a blocking group on device memory
  // back to the caller's buffers ended too; returns the group's result.
  Status settle_p2p(const std::shared_ptr<CollRequest> &request);
  // COHORT_SUCCESS, COHORT_IN_PROGRESS or the request's failure (progresses the queue).
  Status test(const std::shared_ptr<CollRequest> &request);
  Status wait(const std::shared_ptr<CollRequest> &request);

  // Before the team goes away: collectives through host memory still queued run to their
  // end (or their timeout), so that calls a stream holds complete (coll_staged.cc).
  void finish_staged();
  // The progress engine's poll (progress_engine.h): the doorbells of the team's captures
  // looked at, and the queue moved on once (*moved: a replay rang, bytes moved or a request
  // ended); false once nothing staged is queued and no capture lives.
  bool progress_staged(bool *moved);
  // Gated requests still queued on a team that runs, or captures whose doorbells may ring
  // (what the progress engine polls for).
  bool staged_pending() const;
  // Graphs captured on this team exist: their replays start when the engine sees them.
  bool has_captures() const;

  // A replay of a call captured into a CUDA graph rang its doorbell (staged_replay.h): queues
  // its pieces, or fails (queueing nothing) where a group's schedule cannot be built.
  Status queue_replay(StagedReplay &replay);

  // Ends every queued request with `status` and refuses later calls; with `announce`, tells
  // every peer first (this rank aborted the team).  Returns once no poll runs any more.
  void stop(Status status, const std::string &why, bool announce);

 private:
  Status usable_for(const char *what) const;
  // Every rank's `bytes` at `mine`, by rank, into `all` (a host allgather on the team).
  Status allgather_bytes(const void *mine, void *all, size_t bytes);
  Status check(const CollCall &call, coll::CollArgs *args) const;  // coll_checks.cc
  Status choose(const CollCall &call, coll::CollArgs *args, const coll::SelectRule **rule) const;
  void queue(const CollCall &call, const coll::CollArgs &args, const coll::SelectRule &rule,
             const std::shared_ptr<CollRequest> &request);
  // A checked call on device memory: enqueued on `stream`, or with `blocking` on the device
  // transport's own stream and waited for (coll_device.cc).
  Status run_on_device(const CollCall &call, const coll::SelectRule &rule, void *stream,
                       bool blocking);
  // Device memory through host memory (coll_staged.cc): on a team that spans hosts, or one
  // whose GPUs the device transport does not serve.
  bool staged() const;
  std::string staged_reason() const;
  // Makes the staging at first use and takes its own stream for a blocking call (*stream).
  // A stream that is capturing a graph sets *capturing, or is refused where `capturing` is
  // null (a send/recv group on several streams); `what` names the call in messages.
  Status stage_on(const char *what, void **stream, bool blocking, bool *capturing);
  Status run_staged(const CollCall &call, void *stream, bool blocking);
  // A stream call captured into a graph: its doorbell and its copies (staged_replay.h).
  Status capture_staged(const CollCall &call, const StagedPlan &plan, void *stream);
  Status build_p2p(const std::vector<P2POp> &ops, CollRequest *request) const;
  // `streams`: the group's, in order of first use; none for a blocking group.
  Status copy_self_group(const std::vector<P2POp> &ops, void *stream);
  Status post_p2p_staged(const std::vector<P2POp> &ops, const std::vector<void *> &streams,
                         std::shared_ptr<CollRequest> *out);
  Status enqueue_p2p_copies(const std::vector<P2POp> &ops, const std::vector<P2POp> &staged,
                            const StageSite &site, uint32_t piece, void *stream);
  Status capture_p2p(const std::vector<P2POp> &ops, const std::vector<size_t> &offsets,
                     size_t bytes, void *stream);
  // The hub of this team's replays (made at the first capture).
  std::shared_ptr<ReplayHub> replay_hub();
  // Hands `replay` to the graph being captured on `stream` and captures its doorbell.
  Status capture_ring(std::unique_ptr<StagedReplay> replay, void *stream);
  void push(const std::shared_ptr<CollRequest> &request);  // onto the queue, unless stopped
  // The driver refused a stream operation after the call's requests were queued: they would
  // wait for copies that never come, and the peers with them.  Stops the team, tells every
  // peer, and returns `s` with the driver's message.
  Status abandon_queued(Status s);
  // Waits until `stream` ran all it holds, moving the queue on meanwhile.
  Status drain_stream(void *stream, const char *what);
  // Pieces on the slots from `memory`.
  Status prepare_pieces(const CollCall &call, const StagedPlan &plan, char *memory,
                        std::vector<StagedRun> *runs);
  // The stream's part of a call's pieces, numbered from first + 1 on `site`.
  Status enqueue_copies(const CollCall &call, const StagedPlan &plan, const StageSite &site,
                        uint32_t first, void *stream);
  // A call of one small piece as one kernel (staged_kernel.h), where the process launches it.
  bool staged_by_kernel(const StagedPlan &plan) const;
  // Such a piece as lines (lines_gate.h), where `site` has them and its bytes fit.
  bool staged_by_lines(const StagedPlan &plan, const StageSite &site) const;
  std::shared_ptr<RequestGate> lines_gate_of(const StagedPlan &plan, const StageSite &site,
                                             uint32_t piece);
  Status enqueue_kernel(const CollCall &call, const StagedPlan &plan, const StageSite &site,
                        uint32_t piece, bool blocking, bool lines, void *stream);
  Status await_finished(uint32_t piece, void *stream);  // a blocking call's kernel
  Status run_staged_blocking(const CollCall &call, const StagedPlan &plan,
                             std::vector<StagedRun> *runs, void *stream);
  bool progress_requests();
  bool promote_replay();       // a replay's piece whose gate opened, to the head
  void ended(CollRequest &r);  // a request left the queue: its gate hears it
  void advance(CollRequest &r);
  void start(CollRequest &r);
  void idle(CollRequest &r);
  bool take_notice(CollRequest &r);
  bool await_notice(CollRequest &r);
  // How long a broken channel waits for a peer's notice that names the cause (an abort): the
  // notice passes from rank to rank along the plan's links, milliseconds per hop.
  static constexpr double kNoticeGraceSeconds = 0.25;
  Status coll_timeout(const CollRequest &r) const;
  void fail_queued(const CollRequest &failed);

  const TeamInfo &info_;
  TransportSet &transports_;
  const std::unique_ptr<tl::DeviceTransport> &device_;
  coll::Selection selection_;   // COHORT_COLL_ALGO over a tuning file over the defaults
  std::string selection_text_;  // its part of settings()
  double timeout_s_ = 600;      // COHORT_COLL_TIMEOUT
  size_t chunk_bytes_ = 0;      // COHORT_STAGED_CHUNK_BYTES
  size_t kernel_bytes_ = 0;     // COHORT_STAGED_KERNEL_BYTES
  size_t lines_bytes_ = 0;      // COHORT_STAGED_LINES_BYTES
  unsigned spins_ = 0;          // polls before yielding: only with a core per local rank
  mutable std::mutex mutex_;    // one poll of the queue at a time; stop() waits for it
  std::deque<std::shared_ptr<CollRequest>> queue_;  // the running one first
  std::shared_ptr<CollRequest> spare_;              // blocking calls' request, reused
  std::atomic<bool> stopped_{false};
  std::atomic<bool> has_stop_reason_{false};  // stop_reason_ set (read without mutex_)
  std::atomic<bool> watched_{false};          // by the progress engine (progress_engine.cc)
  friend class ProgressEngine;
  static constexpr unsigned kLockSpins = 256;  // push(): tries of the queue's lock before yielding
  std::atomic<int> staged_queued_{0};          // gated requests in the queue
  int replayed_queued_ = 0;                    // of those, a graph's replay's (under mutex_)
  std::shared_ptr<ReplayHub> hub_;             // at the first capture
  Status stop_status_ = COHORT_SUCCESS;        // why the team runs no more (under mutex_)
  std::string stop_reason_;
  std::unique_ptr<Staging> staging_;  // at the first call through host memory
};

}  // namespace cohort
