// A team: the ranks of one MPI communicator (or generic OOB) that run collectives together.
// Creation is a state machine of timed phases (see phase.h); each phase ends with an exchange
// in which every rank reports its status, so all ranks leave creation with the same outcome.
#pragma once

#include <mpi.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cohort.h"
#include "core/oob.h"
#include "core/oob_mpi.h"
#include "team/checkin.h"
#include "team/coll_request.h"
#include "team/config.h"
#include "team/node_layout.h"
#include "team/peer.h"
#include "team/phase.h"
#include "topo/paths.h"
#include "topo/plan.h"
#include "coll/schedule.h"
#include "coll/select.h"
#include "tl_host/host_channels.h"
#include "tl_ucx/channel.h"
#include "topo/topo.h"

namespace cohort {

// Internal; the public C++ wrapper is cohort::Team in cohort.hpp.
class TeamImpl {
 public:
  // Post creation over `comm`; with owns_comm the team frees comm when destroyed.
  static Status post_mpi(MPI_Comm comm, bool owns_comm, const cohort_team_config_t *config,
                         std::shared_ptr<TeamImpl> *out);
  static Status post_oob(const cohort_oob_t *oob, const cohort_team_config_t *config,
                         std::shared_ptr<TeamImpl> *out);
  ~TeamImpl();

  // One nonblocking step of creation: COHORT_SUCCESS when ready, COHORT_IN_PROGRESS, or the
  // error every rank agreed on (repeated, with its message, on every later call).
  Status progress();
  // Drives progress() to the end, yielding the core between polls.
  Status wait();
  // Stage changes so far (lets a waiter see progress without racing on the stage).
  uint64_t transitions() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return transitions_;
  }

  // A host-memory collective on this team (team_coll.cc), blocking.  Buffers and counts as in
  // cohort.h.
  Status collective(coll::Collective collective, const void *src, void *dst, size_t count,
                    cohort_dtype_t dtype, cohort_op_t op, int root);
  // The same, posted: it runs after the team's earlier requests, as test/wait progress it.
  Status post_collective(coll::Collective collective, const void *src, void *dst, size_t count,
                         cohort_dtype_t dtype, cohort_op_t op, int root,
                         std::shared_ptr<CollRequest> *out);
  // A send/recv group on this team (team_p2p.cc): check_p2p checks each operation when it is
  // called; post_p2p posts the checked operations of a group as one request.
  Status check_p2p(const P2POp &op) const;
  Status post_p2p(const std::vector<P2POp> &ops, std::shared_ptr<CollRequest> *out);
  // COHORT_SUCCESS, COHORT_IN_PROGRESS or the request's failure (progresses the queue).
  Status test_request(const std::shared_ptr<CollRequest> &request);
  Status wait_request(const std::shared_ptr<CollRequest> &request);

  Status split(int color, int key, const cohort_team_config_t *config,
               std::shared_ptr<TeamImpl> *child);
  void abort();
  // COHORT_SUCCESS once ready; otherwise the reason the team cannot be used.
  Status check_ready() const;
  Status ready_locked() const;  // check_ready() with mutex_ held
  Status async_error() const;

  int size() const { return size_; }
  int rank() const { return rank_; }
  int cuda_device() const { return peers_[rank_].cuda_device; }
  const NodeLayout &layout() const { return layout_; }
  const std::vector<PeerRecord> &peers() const { return peers_; }
  const cohort_init_report_t &report() const { return report_; }
  const TeamConfig &config() const { return config_; }
  const topo::Plan &plan() const { return plan_; }

 private:
  enum class Stage {
    kCheckIn,
    kDup,
    kPeerInfo,
    kLocalRanks,
    kTopology,
    kGraphs,
    kAlign,
    kConnect,
    kReady,
    kDone,
    kFailed,
    kAborted
  };

  // An exchange in flight: this rank's header + payload sent, everyone's awaited.
  struct Exchange {
    std::unique_ptr<OobRequest> request;
    Phase phase = Phase::kCheckIn;
    const char *step = "";  // "arrive", "confirm", ... for messages
    size_t record_len = 0;
    int64_t deadline_ns = 0;
  };

  TeamImpl() = default;
  void begin(Status config_status);
  Status step();
  Status step_checkin();
  Status step_oob_arrive();
  Status wait_dup_turn();
  Status step_dup();
  Status step_peer_info();
  Status step_local_ranks();
  Status step_topology();  // team_plan.cc
  Status step_graphs();
  Status step_align();
  Status step_connect();  // team_connect.cc
  Status post_connect();
  void attach_host_channels(const std::vector<int> &local_ranks);
  void check_selection_agrees();
  uint64_t settings_hash() const;
  void probe_single_copy(const std::vector<int> &local_ranks);
  void enable_single_copy(const std::vector<char> &ok_by_rank);
  Status connect_ucx();
  bool ucx_sends_done() const;
  std::vector<int> ucx_busy_ranks() const;
  void release_ucx();
  bool is_host_leader(int rank) const { return layout_.local_rank[rank] == 0; }
  Status check_collective(coll::Collective collective, const void *src, void *dst, size_t count,
                          cohort_dtype_t dtype, cohort_op_t op, int root) const;
  bool detect_in_place(coll::Collective collective, const void *src, const void *dst, size_t count,
                       size_t elem) const;
  Status usable_for(const char *what) const;
  Status check_host_memory(const char *what, const char *which, const void *buf) const;
  Status prepare(coll::Collective collective, const void *src, void *dst, size_t count,
                 cohort_dtype_t dtype, cohort_op_t op, int root,
                 const std::shared_ptr<CollRequest> &request);
  void progress_requests();
  void advance(CollRequest &request);
  Status coll_timeout(const CollRequest &request) const;
  void fail_queued(const CollRequest &failed);
  Status step_ready();
  Status load_topology();
  Status host_graph(std::vector<int32_t> *summary_words);
  Status search_or_load(const std::vector<int> &gpus, topo::NodeGraph *graph);
  Status build_plan();
  Status compare_plan_hashes();

  // Posts this rank's record for `phase`; `local` is its status (its detail from last_error).
  Status post_exchange(Oob &oob, Phase phase, const char *step, int channel, Status local,
                       const void *payload, size_t payload_len);
  // SUCCESS when every rank reported success, IN_PROGRESS, or the agreed failure.
  Status poll_exchange();
  Status agreed_failure(const char *records);
  Status timeout_failure();
  bool private_oob_ready() const;
  // Fails the exchange if a peer sent notice that it gave up (see timeout_failure()).
  Status poll_notices();
  const char *payload_of(int rank) const;
  Status local_phase_status(Phase phase);
  void end_phase(Phase phase);
  Status finish_failed(Status status);
  void release();
  void abandon_creation();
  // Sends "this rank gave up" (status, last_error()) to every peer on the private comm.
  Status notify_gave_up(Status status);
  std::string describe(int rank) const;

  mutable std::mutex mutex_;
  Stage stage_ = Stage::kCheckIn;
  uint64_t transitions_ = 0;
  Status status_ = COHORT_IN_PROGRESS;
  std::string error_;  // message of the failure every rank agreed on
  Status config_status_ = COHORT_SUCCESS;
  std::string config_error_;
  TeamConfig config_;
  cohort_team_config_t public_config_ = COHORT_TEAM_CONFIG_INITIALIZER;
  std::string public_name_;  // storage behind public_config_.name

  // Where creation runs: the user's communicator (check-in), then the private duplicate.
  MPI_Comm user_comm_ = MPI_COMM_NULL;
  bool owns_user_comm_ = false;
  std::unique_ptr<CheckIn> checkin_;  // MPI teams; a caller's OOB checks in by allgather
  std::unique_ptr<Oob> oob_;          // private duplicate (MPI) or the caller's OOB
  MPI_Comm dup_comm_ = MPI_COMM_NULL;
  MPI_Request dup_request_ = MPI_REQUEST_NULL;
  std::unique_ptr<DupTicket> dup_ticket_;  // held from posting the dup to its completion
  int64_t dup_deadline_ns_ = 0;
  Exchange exchange_;

  int size_ = 0;
  int rank_ = 0;
  std::vector<ArrivalRecord> arrivals_;  // from check-in: names ranks before peer-info
  std::vector<PeerRecord> peers_;
  NodeLayout layout_;
  // Host leaders only (local rank 0): the host's topology, its paths and its graph.
  std::shared_ptr<const topo::Topology> topology_;
  std::unique_ptr<topo::Paths> paths_;
  bool topology_from_file_ = false;
  int local_max_ = 0;               // ranks on the most populous host: sizes the graph summaries
  std::vector<int32_t> summaries_;  // graphs -> align: every host's packed summary
  topo::Plan plan_;
  // Channels to the other ranks of this host (connect phase); its failure is reported at ready.
  std::unique_ptr<tl_host::HostChannels> host_channels_;
  // Channels to ranks on other hosts (UCX), for teams that span hosts.  The worker is
  // declared first so that the channels go before it.
  std::shared_ptr<tl_ucx::Worker> ucx_worker_;
  std::vector<std::unique_ptr<tl_ucx::SendChannel>> ucx_to_;    // by team rank
  std::vector<std::unique_ptr<tl_ucx::RecvChannel>> ucx_from_;  // by team rank
  std::vector<tl_host::PeerChannels> peer_channels_;            // by team rank
  Status connect_status_ = COHORT_SUCCESS;
  std::string connect_error_;
  coll::Selection selection_;  // COHORT_COLL_ALGO over the defaults, read in the connect phase
  std::string selection_text_;
  size_t single_copy_min_ = 0;   // COHORT_SHM_SINGLE_COPY_BYTES
  bool single_copy_ok_ = false;  // this rank can read its next local rank's memory
  std::deque<std::shared_ptr<CollRequest>> queue_;  // posted collectives, the running one first
  std::string coll_error_;              // a collective failed: the team runs no more (its message)
  std::shared_ptr<CollRequest> spare_;  // blocking calls' request, reused
  double coll_timeout_s_ = 600;         // COHORT_COLL_TIMEOUT, read once in the connect phase
  unsigned spins_ = 0;  // polls before yielding in collectives: only with a core per local rank
  int64_t phase_start_ns_ = 0;
  int64_t phase_ns_[kNumPhases] = {};
  cohort_init_report_t report_{};
};

}  // namespace cohort
