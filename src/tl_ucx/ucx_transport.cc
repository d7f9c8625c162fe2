// Connect phase, for teams that span hosts: every rank sends its worker's address and the id
// its process gave the team for tags; after the exchange it makes an endpoint and a pair of
// channels to each rank on another host (receives are posted, and staging memory taken, only
// when a collective first uses a channel) and posts the receive of its notice tag.
#include "tl_ucx/ucx_transport.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"
#include "tl_ucx/tag_channel.h"
#include "tl_ucx/worker.h"

namespace cohort::tl_ucx {
namespace {

// Worker and lane addresses larger than this together do not fit the record: every rank sends
// it to every rank, so it is capped; a network-only address is far smaller on common fabrics.
constexpr size_t kMaxUcxAddress = 2048;

struct UcxRecord {
  uint64_t team_id;  // the sender's process tags its receives for this team with it
  uint32_t address_len;
  uint32_t lane_count;  // lanes whose addresses follow the worker's, in lane order
  uint32_t lane_len[kMaxLanes];
  char address[kMaxUcxAddress];  // the worker's, then each lane's
};

// Notices travel on the tag of a team id with this sender rank, which no rank has.
constexpr int kNoticeSender = static_cast<int>(kTagRankMask);
// How long an announcement waits for its sends (it is best effort).
constexpr double kAnnounceSeconds = 1.0;

class UcxTransport final : public tl::Transport {
 public:
  ~UcxTransport() override;
  const char *name() const override { return "ucx"; }
  size_t record_bytes(const tl::TeamView &team) const override {
    return team.node_count > 1 ? sizeof(UcxRecord) : 0;
  }
  Status post(const tl::TeamView &team, void *record) override;
  Status connect(const tl::TeamView &team, const tl::RecordTable &records) override;
  // Which messages go direct decides what goes on the wire: every rank must agree.
  std::string settings() const override {
    return "COHORT_UCX_DIRECT_BYTES=" + std::to_string(direct_.min) +
           " COHORT_UCX_FRAGMENT_BYTES=" + std::to_string(direct_.fragment_max);
  }
  bool reaches(int peer) const override {
    return peer >= 0 && peer < static_cast<int>(remotes_.size()) && !remotes_[peer].address.empty();
  }
  coll::PeerChannels channels(int peer) override;
  int peers_connected() const override { return static_cast<int>(connected_.size()); }
  std::mutex *serial() override { return worker_ ? &worker_->mutex() : nullptr; }
  void progress() override {
    if (worker_) worker_->progress();
  }
  void busy_sends(std::vector<int> *ranks) const override;
  void announce(const tl::Notice &notice) override;
  bool poll_notice(tl::Notice *out) override;

 private:
  Status keep_remote(const tl::TeamView &team, const UcxRecord &theirs, int r);
  Status connect_rank(int r);
  void inject_failure(const tl::TeamView &team);
  Status post_notice_receive();
  void drain_notices();

  // What this rank keeps of a rank on another host until it connects to it (or for good).
  struct Remote {
    std::string address;             // its worker's; empty: this host
    std::vector<std::string> lanes;  // its lanes'
    uint64_t team_id = 0;            // tags its receives for this team
  };

  std::shared_ptr<Worker> worker_;                  // declared first: the channels go before it
  std::vector<Remote> remotes_;                     // by team rank
  std::vector<std::unique_ptr<SendChannel>> to_;    // by team rank, once connected
  std::vector<std::unique_ptr<RecvChannel>> from_;  // by team rank, once connected
  std::vector<Endpoint *> endpoints_;               // by team rank, once connected
  std::vector<int> connected_;                      // the ranks with channels, in that order
  std::function<std::string(int)> describe_;
  int rank_ = 0;
  uint64_t my_team_id_ = 0;
  ucp_tag_t notice_tag_ = 0;  // this rank's notices come on it
  DirectForm direct_;         // COHORT_UCX_DIRECT_BYTES, COHORT_UCX_FRAGMENT_BYTES
  tl::Notice notice_in_;
  void *notice_request_ = nullptr;  // the posted receive of a notice
};

// The receive of a notice must not outlive its buffer: cancelled and waited for, bounded.
// Notices that came after the team stopped polling are taken too, so that none is left
// unmatched on the shared worker.
UcxTransport::~UcxTransport() {
  if (!worker_) return;
  std::lock_guard<std::mutex> lock(worker_->mutex());
  if (notice_request_ != nullptr) {
    ucp_request_cancel(worker_->handle(), notice_request_);
    const int64_t deadline = deadline_after(kAnnounceSeconds);
    while (ucp_request_check_status(notice_request_) == UCS_INPROGRESS && now_ns() < deadline) {
      worker_->progress();
    }
    ucp_request_free(notice_request_);
    drain_notices();
  }
  to_.clear();
  from_.clear();
}

void UcxTransport::drain_notices() {
  worker_->progress();
  ucp_tag_recv_info_t info = {};
  while (ucp_tag_message_h message =
             ucp_tag_probe_nb(worker_->handle(), notice_tag_, ~ucp_tag_t{0}, 1, &info)) {
    tl::Notice ignored;
    ucp_request_param_t param = {};
    void *request =
        ucp_tag_msg_recv_nbx(worker_->handle(), &ignored, sizeof(ignored), message, &param);
    if (UCS_PTR_IS_ERR(request)) return;
    const int64_t deadline = deadline_after(kAnnounceSeconds);
    while (request != nullptr && ucp_request_check_status(request) == UCS_INPROGRESS &&
           now_ns() < deadline) {
      worker_->progress();
    }
    if (request == nullptr) continue;
    const bool done = ucp_request_check_status(request) != UCS_INPROGRESS;
    ucp_request_free(request);
    if (!done) return;  // it still writes into `ignored`: stop here
  }
}

Status UcxTransport::post(const tl::TeamView &team, void *out) {
  int64_t direct_min = 0, fragment_max = 0;
  Status s = param_int("UCX_DIRECT_BYTES", &direct_min);
  if (!is_error(s)) s = param_int("UCX_FRAGMENT_BYTES", &fragment_max);
  if (is_error(s)) return s;
  direct_ = DirectForm{static_cast<size_t>(direct_min), static_cast<size_t>(fragment_max)};
  if (team.node_count < 2) return COHORT_SUCCESS;
  auto *record = static_cast<UcxRecord *>(out);
  s = Worker::acquire(team.bus_id.empty() ? std::string() : team.bus_id[team.rank],
                      team.local_size(), &worker_);
  if (is_error(s)) return s;
  // The worker's address, then as many lanes' as fit (one at least).
  std::vector<std::string> parts{worker_->address()};
  for (const std::string &lane : worker_->lane_addresses()) parts.push_back(lane);
  size_t used = 0, fit = 0;
  while (fit < parts.size() && used + parts[fit].size() <= kMaxUcxAddress)
    used += parts[fit++].size();
  if (fit < 2) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "the UCX worker and lane addresses are %zu bytes, more than the %zu a team's "
                 "connect phase carries: restrict UCX to the devices between hosts "
                 "(UCX_NET_DEVICES)",
                 parts[0].size() + parts[1].size(), kMaxUcxAddress);
  }
  record->team_id = worker_->new_team_id();
  record->address_len = static_cast<uint32_t>(parts[0].size());
  record->lane_count = static_cast<uint32_t>(fit - 1);
  char *at = record->address;
  for (size_t i = 0; i < fit; ++i) {
    if (i > 0) record->lane_len[i - 1] = static_cast<uint32_t>(parts[i].size());
    std::memcpy(at, parts[i].data(), parts[i].size());
    at += parts[i].size();
  }
  return COHORT_SUCCESS;
}

Status UcxTransport::connect(const tl::TeamView &team, const tl::RecordTable &records) {
  if (team.node_count < 2) return COHORT_SUCCESS;
  std::lock_guard<std::mutex> lock(worker_->mutex());
  const auto &mine = *static_cast<const UcxRecord *>(records.of(team.rank));
  describe_ = team.describe;
  rank_ = team.rank;
  my_team_id_ = mine.team_id;
  remotes_.assign(team.size, Remote{});
  to_.resize(team.size);
  from_.resize(team.size);
  endpoints_.assign(team.size, nullptr);
  for (int r = 0; r < team.size; ++r) {
    if (team.same_host(r)) continue;
    Status s = keep_remote(team, *static_cast<const UcxRecord *>(records.of(r)), r);
    if (is_error(s)) return s;
  }
  for (int r : team.plan_peers) {
    if (!reaches(r)) continue;
    if (Status s = connect_rank(r); is_error(s)) return s;
  }
  notice_tag_ = make_tag(mine.team_id, kNoticeSender);
  Status s = post_notice_receive();
  if (is_error(s)) return s;
  inject_failure(team);
  size_t kept = 0;
  for (const Remote &r : remotes_) {
    kept += r.address.size();
    for (const std::string &lane : r.lanes) kept += lane.size();
  }
  COHORT_LOG_INFO(NET,
                  "%s: UCX channels to %d ranks the plan links to; %d ranks on %d other hosts "
                  "reachable, connected on first use (their addresses: %zu bytes)",
                  team.name.c_str(), peers_connected(), team.size - team.local_size(),
                  team.node_count - 1, kept);
  return COHORT_SUCCESS;
}

Status UcxTransport::post_notice_receive() {
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  notice_request_ = ucp_tag_recv_nbx(worker_->handle(), &notice_in_, sizeof(notice_in_),
                                     notice_tag_, ~ucp_tag_t{0}, &param);
  if (!UCS_PTR_IS_ERR(notice_request_)) return COHORT_SUCCESS;
  Status s = failf(COHORT_ERR_SYSTEM, "UCX: posting the receive of team notices failed: %s",
                   ucs_status_string(UCS_PTR_STATUS(notice_request_)));
  notice_request_ = nullptr;
  return s;
}

Status UcxTransport::keep_remote(const tl::TeamView &team, const UcxRecord &theirs, int r) {
  size_t total = theirs.address_len;
  for (uint32_t i = 0; i < std::min<uint32_t>(theirs.lane_count, kMaxLanes); ++i) {
    total += theirs.lane_len[i];
  }
  if (theirs.address_len == 0 || theirs.lane_count < 1 || theirs.lane_count > kMaxLanes ||
      total > kMaxUcxAddress) {
    return failf(COHORT_ERR_INTERNAL, "%s sent UCX addresses of %zu bytes for %u lanes",
                 team.describe(r).c_str(), total, theirs.lane_count);
  }
  Remote remote{std::string(theirs.address, theirs.address_len), {}, theirs.team_id};
  const char *at = theirs.address + theirs.address_len;
  for (uint32_t i = 0; i < theirs.lane_count; ++i) {
    remote.lanes.emplace_back(at, theirs.lane_len[i]);
    at += theirs.lane_len[i];
  }
  remotes_[r] = std::move(remote);
  return COHORT_SUCCESS;
}

// The endpoint to rank r's worker and a channel each way (callers hold the worker's mutex).
Status UcxTransport::connect_rank(int r) {
  if (to_[r]) return COHORT_SUCCESS;
  Status s = worker_->endpoint(remotes_[r].address, describe_(r), &endpoints_[r]);
  if (is_error(s)) return s;
  std::vector<LaneLink> lanes;
  s = worker_->lane_links(remotes_[r].lanes, describe_(r), &lanes);
  if (is_error(s)) return s;
  const size_t lane_count = lanes.size();
  to_[r] = std::make_unique<SendChannel>(
      *worker_, *endpoints_[r], make_tag(remotes_[r].team_id, rank_), direct_, std::move(lanes));
  from_[r] = std::make_unique<RecvChannel>(*worker_, make_tag(my_team_id_, r), endpoints_[r],
                                           direct_, worker_->lanes(lane_count));
  connected_.push_back(r);
  return COHORT_SUCCESS;
}

// Testing (COHORT_INJECT_UCX_FAILURE=RANK:PEER[:MESSAGES]): team rank RANK's endpoint to PEER
// fails as if UCX had reported the peer lost, once MESSAGES more messages went to it.
void UcxTransport::inject_failure(const tl::TeamView &team) {
  std::string text;
  if (is_error(param_string("INJECT_UCX_FAILURE", &text)) || text.empty()) return;
  int rank = -1, peer = -1, messages = 1;
  if (sscanf(text.c_str(), "%d:%d:%d", &rank, &peer, &messages) < 2 || rank != team.rank) return;
  if (peer < 0 || peer >= team.size || !reaches(peer) || messages < 1 ||
      is_error(connect_rank(peer))) {
    COHORT_LOG_WARN(NET, "COHORT_INJECT_UCX_FAILURE=%s: no UCX channel from rank %d to rank %d",
                    text.c_str(), rank, peer);
    return;
  }
  to_[peer]->fail_after(messages);
}

coll::PeerChannels UcxTransport::channels(int peer) {
  if (!reaches(peer)) return {};
  if (Status s = connect_rank(peer); is_error(s)) {
    COHORT_LOG_WARN(NET, "UCX: no channel to %s: %s", describe_(peer).c_str(),
                    last_error().c_str());
    return {};
  }
  return coll::PeerChannels{to_[peer].get(), from_[peer].get()};
}

void UcxTransport::busy_sends(std::vector<int> *ranks) const {
  for (int r : connected_) {
    if (to_[r]->in_flight() > 0) ranks->push_back(r);
  }
}

// One message to every rank on another host this rank has channels to (the plan's links at
// least; each rank passes a notice on, so it reaches every rank); waits (bounded) for them to
// leave, because the team may be torn down right after.  A send still in flight then keeps its
// buffer.
void UcxTransport::announce(const tl::Notice &notice) {
  if (!worker_) return;
  auto *message = new tl::Notice(notice);
  std::vector<void *> requests;
  for (int r : connected_) {
    if (endpoints_[r]->status != UCS_OK) continue;
    ucp_request_param_t param = {};
    void *request = ucp_tag_send_nbx(endpoints_[r]->ep, message, sizeof(*message),
                                     make_tag(remotes_[r].team_id, kNoticeSender), &param);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) requests.push_back(request);
  }
  const int64_t deadline = deadline_after(kAnnounceSeconds);
  bool left = false;
  for (void *request : requests) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS && now_ns() < deadline) {
      worker_->progress();
    }
    left = left || ucp_request_check_status(request) == UCS_INPROGRESS;
    ucp_request_free(request);
  }
  if (!left) delete message;
}

// Each notice is taken once; the receive is posted again for the next (relayed ones follow).
bool UcxTransport::poll_notice(tl::Notice *out) {
  if (notice_request_ == nullptr) return false;
  ucp_tag_recv_info_t info = {};
  if (ucp_tag_recv_request_test(notice_request_, &info) != UCS_OK) return false;
  ucp_request_free(notice_request_);
  *out = notice_in_;
  post_notice_receive();
  return true;
}

}  // namespace

std::unique_ptr<tl::Transport> make_ucx_transport() { return std::make_unique<UcxTransport>(); }

}  // namespace cohort::tl_ucx
