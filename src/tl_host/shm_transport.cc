// Connect phase: each host's leader (local rank 0) creates the segment and sends its name in
// its record; the others attach after the exchange.  Every record also carries the address of
// a probe word, which the next local rank reads (cross-memory attach) to learn whether single
// copy works here; each rank reports that in the ready phase, and single copy is switched on
// for a host only if every rank of it can.  The leader unlinks the name once ready succeeded.
#include "tl_host/shm_transport.h"

#include <cstring>

#include "core/log.h"
#include "core/params.h"
#include "tl_host/host_channels.h"

namespace cohort::tl_host {
namespace {

// What a local peer reads from this process to learn whether single copy works here.
constexpr uint64_t kProbeMagic = 0x434f484f52545052;  // "COHORTPR"
const volatile uint64_t g_probe = kProbeMagic;

struct ShmRecord {
  SegmentInfo segment;     // leaders of hosts with several ranks
  uint64_t probe_address;  // of g_probe in this process
};

class ShmTransport final : public tl::Transport {
 public:
  const char *name() const override { return "shm"; }
  size_t record_bytes(const tl::TeamView &) const override { return sizeof(ShmRecord); }
  Status post(const tl::TeamView &team, void *record) override;
  Status connect(const tl::TeamView &team, const tl::RecordTable &records) override;
  std::string settings() const override {
    return "COHORT_SHM_SINGLE_COPY_BYTES=" + std::to_string(single_copy_min_);
  }
  bool reaches(int peer) const override {
    return peer >= 0 && peer < static_cast<int>(peers_.size()) && peers_[peer].to != nullptr;
  }
  coll::PeerChannels channels(int peer) override {
    return reaches(peer) ? peers_[peer] : coll::PeerChannels{};
  }
  // A host's mailboxes are all mapped with its segment.
  int peers_connected() const override {
    int n = 0;
    for (const coll::PeerChannels &p : peers_) n += p.to != nullptr;
    return n;
  }
  uint64_t ready_word() const override { return single_copy_ok_ ? 1 : 0; }
  void ready(const tl::TeamView &team, const std::vector<uint64_t> &words) override;
  void announce(const tl::Notice &notice) override {
    if (host_) host_->post_notice(notice);
  }
  bool poll_notice(tl::Notice *out) override;

 private:
  void probe_single_copy(const tl::TeamView &team, const std::vector<int> &local_ranks,
                         const tl::RecordTable &records);

  size_t single_copy_min_ = 0;   // COHORT_SHM_SINGLE_COPY_BYTES
  bool single_copy_ok_ = false;  // this rank can read its next local rank's memory
  int rank_ = 0;
  std::unique_ptr<HostChannels> host_;
  std::vector<coll::PeerChannels> peers_;  // by team rank
};

Status ShmTransport::post(const tl::TeamView &team, void *out) {
  auto *record = static_cast<ShmRecord *>(out);
  rank_ = team.rank;
  int64_t single_copy = 0;
  Status s = param_int("SHM_SINGLE_COPY_BYTES", &single_copy);
  if (is_error(s)) return s;
  single_copy_min_ = static_cast<size_t>(single_copy);
  record->probe_address = reinterpret_cast<uint64_t>(&g_probe);
  if (team.local_rank[team.rank] != 0 || team.local_size() < 2) return COHORT_SUCCESS;
  int64_t capacity = 0;
  if (s = param_int("SHM_MAILBOX_BYTES", &capacity); is_error(s)) return s;
  return HostChannels::create(team.host_id, team.local_size(), static_cast<size_t>(capacity),
                              &record->segment, &host_);
}

Status ShmTransport::connect(const tl::TeamView &team, const tl::RecordTable &records) {
  const std::vector<int> local_ranks = team.local_ranks();
  peers_.assign(team.size, coll::PeerChannels{});
  if (local_ranks.size() < 2) return COHORT_SUCCESS;
  if (!host_) {
    SegmentInfo info;
    std::memcpy(&info, records.of(local_ranks[0]), sizeof(info));
    Status s = HostChannels::attach(info, &host_);
    if (is_error(s)) return s;
  }
  peers_ = host_->bind(team.local_rank[team.rank], local_ranks, team.size);
  probe_single_copy(team, local_ranks, records);
  return COHORT_SUCCESS;
}

// Whether this rank can read the next local rank's memory (same user, ptrace permitted, the
// system call not filtered).
void ShmTransport::probe_single_copy(const tl::TeamView &team, const std::vector<int> &local_ranks,
                                     const tl::RecordTable &records) {
  single_copy_ok_ = false;
  if (single_copy_min_ == 0) return;
  const int peer = local_ranks[(team.local_rank[team.rank] + 1) % local_ranks.size()];
  const auto *record = static_cast<const ShmRecord *>(records.of(peer));
  uint64_t value = 0;
  Status s = read_process_memory(
      team.pid[peer], reinterpret_cast<const void *>(record->probe_address), &value, sizeof(value));
  single_copy_ok_ = !is_error(s) && value == kProbeMagic;
  if (!single_copy_ok_) {
    COHORT_LOG_INFO(COLL, "%s: no single copy on this host: %s", team.name.c_str(),
                    is_error(s) ? last_error().c_str() : "the probe read the wrong value");
  }
}

// Every rank of this host has attached (it said so in ready): the name can go.  Single copy
// is switched on where every rank of the host can read its peers.
void ShmTransport::ready(const tl::TeamView &team, const std::vector<uint64_t> &words) {
  if (!host_) return;
  if (team.local_rank[team.rank] == 0) host_->unlink();
  if (single_copy_min_ == 0) return;
  std::vector<int> pid_of_local;
  for (int r : team.local_ranks()) {
    if (words[r] == 0) return;
    pid_of_local.push_back(team.pid[r]);
  }
  host_->enable_references(single_copy_min_, pid_of_local);
}

bool ShmTransport::poll_notice(tl::Notice *out) {
  return host_ && host_->read_notice(out) && out->rank != rank_;
}

}  // namespace

std::unique_ptr<tl::Transport> make_shm_transport() { return std::make_unique<ShmTransport>(); }

}  // namespace cohort::tl_host
