// Team creation, connect phase: each host's leader creates the shared-memory mailboxes of its
// ranks and sends the segment's name in the phase record; the others attach after the
// exchange.  In a team that spans hosts every rank also sends its UCX worker's address and
// the id its process gave the team for tags, and after the exchange makes a UCX channel to
// and from each rank on another host.  Every record also carries a hash of the settings that
// decide what goes on the wire (checked to agree) and the address of a probe word, which the
// next local rank reads to learn whether single copy works here.  An attach or endpoint that
// fails is this rank's status in the ready phase, so every rank still ends alike; the leader
// unlinks the name once ready succeeded.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"
#include "team/rank_list.h"
#include "team/team.h"

namespace cohort {
namespace {

// A worker address larger than this does not fit the record: every rank sends it to every
// rank, so it is capped; a network-only address is far smaller on common fabrics.
constexpr size_t kMaxUcxAddress = 2048;

struct UcxRecord {
  uint64_t team_id;  // the sender's process tags its receives for this team with it
  uint32_t address_len;
  uint32_t reserved;
  char address[kMaxUcxAddress];
};

// What a local peer reads from this process to learn whether single copy works here.
constexpr uint64_t kProbeMagic = 0x434f484f52545052;  // "COHORTPR"
const volatile uint64_t g_probe = kProbeMagic;

struct ConnectRecord {
  tl_host::SegmentInfo segment;
  uint64_t selection_hash;  // of the collective settings: every rank must choose alike
  uint64_t probe_address;   // of g_probe in this process
  UcxRecord ucx;            // only sent when the team spans hosts
};

uint64_t fnv1a(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Status TeamImpl::post_connect() {
  ConnectRecord record;
  std::memset(&record, 0, sizeof(record));
  const bool spans_hosts = layout_.node_count > 1;
  Status s = local_phase_status(Phase::kConnect);
  if (!is_error(s)) {
    int64_t single_copy = 0;
    s = param_string("COLL_ALGO", &selection_text_);
    if (!is_error(s)) s = coll::Selection::parse(selection_text_, &selection_);
    if (!is_error(s)) s = param_int("SHM_SINGLE_COPY_BYTES", &single_copy);
    single_copy_min_ = static_cast<size_t>(single_copy);
    record.selection_hash = settings_hash();
    record.probe_address = reinterpret_cast<uint64_t>(&g_probe);
  }
  if (!is_error(s) && is_host_leader(rank_) && layout_.local_size[rank_] > 1) {
    int64_t capacity = 0;
    s = param_int("SHM_MAILBOX_BYTES", &capacity);
    if (!is_error(s)) {
      s = tl_host::HostChannels::create(peers_[rank_].host_id, layout_.local_size[rank_],
                                        static_cast<size_t>(capacity), &record.segment,
                                        &host_channels_);
    }
  }
  if (!is_error(s) && spans_hosts) {
    s = tl_ucx::Worker::acquire(&ucx_worker_);
    if (!is_error(s) && ucx_worker_->address().size() > kMaxUcxAddress) {
      s = failf(COHORT_ERR_NOT_SUPPORTED,
                "the UCX worker address is %zu bytes, more than the %zu a team's connect phase "
                "carries: restrict UCX to the devices between hosts (UCX_NET_DEVICES)",
                ucx_worker_->address().size(), kMaxUcxAddress);
    }
    if (!is_error(s)) {
      record.ucx.team_id = ucx_worker_->new_team_id();
      record.ucx.address_len = static_cast<uint32_t>(ucx_worker_->address().size());
      std::memcpy(record.ucx.address, ucx_worker_->address().data(), record.ucx.address_len);
    }
  }
  return post_exchange(*oob_, Phase::kConnect, "connect", phase_channel(Phase::kConnect), s,
                       &record, spans_hosts ? sizeof(record) : offsetof(ConnectRecord, ucx));
}

Status TeamImpl::step_connect() {
  if (!exchange_.request) return post_connect();
  Status s = poll_exchange();
  if (s != COHORT_SUCCESS) return s;
  if (is_error(param_double("COLL_TIMEOUT", &coll_timeout_s_))) coll_timeout_s_ = 600;
  const int local_size = layout_.local_size[rank_];
  // A message from a peer of this host takes well under a microsecond: poll that long before
  // yielding, unless ranks share cores (then spinning only delays the peer that must run).
  cpu_set_t cpus;
  int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  spins_ = local_size <= std::max(cores, online > 0 ? online : 1) ? 64 : 0;
  std::vector<int> local_ranks;  // team rank of each local rank of this host
  for (int r = 0; r < size_; ++r) {
    if (layout_.node_of_rank[r] == layout_.node_of_rank[rank_]) local_ranks.push_back(r);
  }
  attach_host_channels(local_ranks);
  check_selection_agrees();
  if (layout_.node_count > 1 && !is_error(connect_status_)) {
    connect_status_ = connect_ucx();
    if (is_error(connect_status_)) connect_error_ = last_error();
  }
  exchange_.request.reset();
  end_phase(Phase::kConnect);
  stage_ = Stage::kReady;
  return COHORT_IN_PROGRESS;
}

// The settings that decide what goes on the wire: the algorithm rules and the single-copy size.
uint64_t TeamImpl::settings_hash() const {
  return fnv1a(selection_text_ + "\n" + std::to_string(single_copy_min_));
}

// Ranks that choose algorithms or message forms differently would wait on each other until
// the collective timeout: settings that differ are refused at creation, naming a rank.
void TeamImpl::check_selection_agrees() {
  const uint64_t mine = settings_hash();
  for (int r = 0; r < size_ && !is_error(connect_status_); ++r) {
    const auto *theirs = reinterpret_cast<const ConnectRecord *>(payload_of(r));
    if (theirs->selection_hash == mine) continue;
    connect_status_ = failf(COHORT_ERR_INVALID_USAGE,
                            "COHORT_COLL_ALGO or COHORT_SHM_SINGLE_COPY_BYTES differs between "
                            "ranks: %s has other values than rank %d ('%s', %zu); set them alike "
                            "on every rank",
                            describe(r).c_str(), rank_, selection_text_.c_str(), single_copy_min_);
    connect_error_ = last_error();
  }
}

void TeamImpl::attach_host_channels(const std::vector<int> &local_ranks) {
  if (layout_.local_size[rank_] > 1 && !is_host_leader(rank_)) {
    tl_host::SegmentInfo info;
    std::memcpy(&info, payload_of(local_ranks[0]), sizeof(info));
    connect_status_ = tl_host::HostChannels::attach(info, &host_channels_);
    if (is_error(connect_status_)) connect_error_ = last_error();
  }
  if (host_channels_) {
    peer_channels_ = host_channels_->bind(layout_.local_rank[rank_], local_ranks, size_);
    probe_single_copy(local_ranks);
  } else {
    peer_channels_.assign(size_, tl_host::PeerChannels{});
  }
}

// Whether this rank can read the next local rank's memory (cross-memory attach: same user,
// ptrace permitted, the system call not filtered).  Reported in the ready phase; single copy
// is used on a host only if every rank of it can.
void TeamImpl::probe_single_copy(const std::vector<int> &local_ranks) {
  single_copy_ok_ = false;
  if (single_copy_min_ == 0 || local_ranks.size() < 2) return;
  const int me = layout_.local_rank[rank_];
  const int peer = local_ranks[(me + 1) % local_ranks.size()];
  const auto *record = reinterpret_cast<const ConnectRecord *>(payload_of(peer));
  uint64_t value = 0;
  Status s = tl_host::read_process_memory(peers_[peer].pid,
                                          reinterpret_cast<const void *>(record->probe_address),
                                          &value, sizeof(value));
  single_copy_ok_ = !is_error(s) && value == kProbeMagic;
  if (!single_copy_ok_) {
    COHORT_LOG_INFO(COLL, "%s: no single copy on this host: %s", config_.name.c_str(),
                    is_error(s) ? last_error().c_str() : "the probe read the wrong value");
  }
}

// After ready: every rank of this host reported whether its probe worked.
void TeamImpl::enable_single_copy(const std::vector<char> &ok_by_rank) {
  if (!host_channels_ || single_copy_min_ == 0) return;
  std::vector<int> pid_of_local(layout_.local_size[rank_], 0);
  for (int r = 0; r < size_; ++r) {
    if (layout_.node_of_rank[r] != layout_.node_of_rank[rank_]) continue;
    if (!ok_by_rank[r]) return;
    pid_of_local[layout_.local_rank[r]] = peers_[r].pid;
  }
  host_channels_->enable_references(single_copy_min_, pid_of_local);
}

// An endpoint and a pair of channels per rank on another host.  Receives are posted, and
// staging memory taken, only when a collective first uses a channel.
Status TeamImpl::connect_ucx() {
  std::lock_guard<std::mutex> lock(ucx_worker_->mutex());
  const UcxRecord &mine = reinterpret_cast<const ConnectRecord *>(payload_of(rank_))->ucx;
  ucx_to_.resize(size_);
  ucx_from_.resize(size_);
  for (int r = 0; r < size_; ++r) {
    if (layout_.node_of_rank[r] == layout_.node_of_rank[rank_]) continue;
    const UcxRecord &theirs = reinterpret_cast<const ConnectRecord *>(payload_of(r))->ucx;
    if (theirs.address_len == 0 || theirs.address_len > kMaxUcxAddress) {
      return failf(COHORT_ERR_INTERNAL, "%s sent a UCX address of %u bytes", describe(r).c_str(),
                   theirs.address_len);
    }
    ucp_ep_h ep = nullptr;
    Status s =
        ucx_worker_->endpoint(std::string(theirs.address, theirs.address_len), describe(r), &ep);
    if (is_error(s)) return s;
    ucx_to_[r] = std::make_unique<tl_ucx::SendChannel>(*ucx_worker_, ep,
                                                       tl_ucx::make_tag(theirs.team_id, rank_));
    ucx_from_[r] =
        std::make_unique<tl_ucx::RecvChannel>(*ucx_worker_, tl_ucx::make_tag(mine.team_id, r));
    peer_channels_[r] = tl_host::PeerChannels{ucx_to_[r].get(), ucx_from_[r].get()};
  }
  COHORT_LOG_INFO(COLL, "%s: UCX channels to %d ranks on %d other hosts", config_.name.c_str(),
                  size_ - layout_.local_size[rank_], layout_.node_count - 1);
  return COHORT_SUCCESS;
}

// Ranks this rank's UCX sends still wait on (none without UCX).
std::vector<int> TeamImpl::ucx_busy_ranks() const {
  std::vector<int> busy;
  for (int r = 0; r < static_cast<int>(ucx_to_.size()); ++r) {
    if (ucx_to_[r] && ucx_to_[r]->in_flight() > 0) busy.push_back(r);
  }
  return busy;
}

bool TeamImpl::ucx_sends_done() const {
  for (const auto &channel : ucx_to_) {
    if (channel && channel->in_flight() > 0) return false;
  }
  return true;
}

void TeamImpl::release_ucx() {
  if (!ucx_worker_) return;
  {
    std::lock_guard<std::mutex> lock(ucx_worker_->mutex());
    peer_channels_.clear();
    ucx_to_.clear();
    ucx_from_.clear();
  }
  ucx_worker_.reset();  // the last team that spans hosts takes the worker down
}

}  // namespace cohort
