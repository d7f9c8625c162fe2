// Team creation: check-in (arrive, confirm, private communicator) -> peer-info ->
// local-ranks -> ready.  Each step posts this rank's record, then polls for everyone's.
#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "core/oob_user.h"
#include "team/lingering.h"
#include "team/rank_list.h"
#include "team/report.h"
#include "team/team.h"

namespace cohort {
namespace {

// Check-in runs on the user's communicator on the top tag of the tag range, away from
// application tags; everything after it on the team's private communicator, by channel.
constexpr int kArriveChannel = 0;  // a caller's OOB has no tags: channel is ignored there
// Private-communicator channel for "I gave up" notices (never used on the user's comm, where
// a notice could outlive the failed attempt and spoil the next one).
constexpr int kNoticeChannel = 15;

// What the missing ranks of a timed-out exchange after check-in did not do, and why.
struct MissingText {
  const char *what;
  const char *why;
};

MissingText missing_text(const char *step) {
  if (strcmp(step, "arrive") == 0) {
    return {"never arrived", "Did every rank call team creation?"};
  }
  return {"did not reach this phase", "They are stuck or failed in the previous phase, or exited."};
}

}  // namespace

Status TeamImpl::post_mpi(MPI_Comm comm, bool owns_comm, const cohort_team_config_t *config,
                          std::shared_ptr<TeamImpl> *out) {
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  team->user_comm_ = comm;
  team->owns_user_comm_ = owns_comm;
  MPI_Comm_size(comm, &team->size_);
  MPI_Comm_rank(comm, &team->rank_);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  log_set_rank(world_rank);
  team->begin(resolve_config(config, &team->config_));
  // A rank whose config is bad still checks in, carrying its error, so all fail alike.
  CheckIn::Options checkin;
  checkin.comm = comm;
  checkin.tag_base = mpi_tag_upper_bound();
  checkin.timeout_s = team->config_.init_timeout_s;
  checkin.local_status = team->config_status_;
  checkin.local_detail = team->config_error_;
  if (!is_error(checkin.local_status)) {
    checkin.local_status = team->local_phase_status(Phase::kCheckIn);
    if (is_error(checkin.local_status)) checkin.local_detail = last_error();
  }
  team->checkin_ = std::make_unique<CheckIn>(checkin);
  *out = std::move(team);
  return COHORT_SUCCESS;
}

Status TeamImpl::post_oob(const cohort_oob_t *oob, const cohort_team_config_t *config,
                          std::shared_ptr<TeamImpl> *out) {
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  team->oob_ = std::make_unique<UserOob>(*oob);
  team->size_ = team->oob_->size();
  team->rank_ = team->oob_->rank();
  team->begin(resolve_config(config, &team->config_));
  *out = std::move(team);
  return COHORT_SUCCESS;
}

void TeamImpl::begin(Status config_status) {
  config_status_ = config_status;
  if (is_error(config_status)) config_error_ = last_error();
  public_name_ = config_.name;
  public_config_.init_timeout = config_.init_timeout_s;
  public_config_.cuda_device = config_.cuda_device;
  public_config_.allow_shared_gpu = config_.allow_shared_gpu ? 1 : 0;
  public_config_.name = public_name_.c_str();
  phase_start_ns_ = now_ns();
  COHORT_LOG_INFO(INIT, "%s: creating, rank %d of %d over %s OOB, timeout %.3g s",
                  config_.name.c_str(), rank_, size_, oob_ ? "a caller's" : "the MPI",
                  config_.init_timeout_s);
}

Status TeamImpl::progress() {
  progress_lingering();
  std::lock_guard<std::mutex> lock(mutex_);
  bool uses_mpi = !oob_ || dynamic_cast<MpiOob *>(oob_.get()) != nullptr;
  if (uses_mpi && stage_ < Stage::kDone && !mpi_usable()) {
    return finish_failed(
        fail(COHORT_ERR_INVALID_USAGE, "team creation cannot continue: MPI is already finalised"));
  }
  for (;;) {
    Stage before = stage_;
    Status s = step();
    if (stage_ != before) ++transitions_;
    if (s != COHORT_IN_PROGRESS || stage_ == before) return s;
  }
}

Status TeamImpl::wait() {
  Backoff backoff;
  uint64_t seen = 0;
  for (;;) {
    Status s = progress();
    if (s != COHORT_IN_PROGRESS) return s;
    uint64_t now_seen = transitions();
    if (now_seen != seen) backoff.reset();  // a new step: its messages come soon
    seen = now_seen;
    backoff.pause();
  }
}

Status TeamImpl::step() {
  switch (stage_) {
    case Stage::kCheckIn: return checkin_ ? step_checkin() : step_oob_arrive();
    case Stage::kDup: return step_dup();
    case Stage::kPeerInfo: return step_peer_info();
    case Stage::kLocalRanks: return step_local_ranks();
    case Stage::kTopology: return step_topology();
    case Stage::kGraphs: return step_graphs();
    case Stage::kAlign: return step_align();
    case Stage::kConnect: return step_connect();
    case Stage::kReady: return step_ready();
    case Stage::kDone: return COHORT_SUCCESS;
    case Stage::kFailed: return fail(status_, error_);
    case Stage::kAborted:
      return fail(COHORT_ERR_ABORTED, "team '" + config_.name + "' was aborted");
  }
  return fail(COHORT_ERR_INTERNAL, "team in an unknown stage");
}

Status TeamImpl::step_checkin() {
  Status s = checkin_->progress();
  if (s == COHORT_IN_PROGRESS) return s;
  if (is_error(s)) return finish_failed(s);
  if (!checkin_->dup_turn()) return wait_dup_turn();
  arrivals_.resize(size_);
  for (int r = 0; r < size_; ++r) arrivals_[r] = checkin_->records()[r].who;
  dup_ticket_ = checkin_->take_ticket();
  checkin_.reset();
  int rc = MPI_Comm_idup(user_comm_, &dup_comm_, &dup_request_);
  if (rc != MPI_SUCCESS) {
    return finish_failed(
        failf(COHORT_ERR_MPI, "MPI_Comm_idup in phase check-in: %s", mpi_error_string(rc).c_str()));
  }
  dup_deadline_ns_ = deadline_after(config_.init_timeout_s);
  stage_ = Stage::kDup;
  return COHORT_IN_PROGRESS;
}

// Checked in, but a creation posted earlier on this communicator (one still being created,
// or one abandoned and finishing in the background) has not decided on its MPI_Comm_idup
// yet; that dup must come first.  Bounded by the creation timeout.
Status TeamImpl::wait_dup_turn() {
  if (dup_deadline_ns_ == 0) dup_deadline_ns_ = deadline_after(config_.init_timeout_s);
  if (now_ns() < dup_deadline_ns_) return COHORT_IN_PROGRESS;
  return finish_failed(
      failf(COHORT_ERR_TIMEOUT,
            "team creation timed out in phase check-in after %.2f s: every rank checked in, but a "
            "team creation posted earlier on this communicator by this process has not finished "
            "its check-in and MPI_Comm_idup, which must come first. Progress (or abort) the "
            "earlier creation too: cohort_team_create_test on each handle",
            config_.init_timeout_s));
}

// A caller's OOB is private to Cohort already: one allgather checks everyone in.
Status TeamImpl::step_oob_arrive() {
  if (!exchange_.request) {
    Status local = config_status_;
    if (is_error(local)) {
      fail(local, config_error_);
    } else {
      local = local_phase_status(Phase::kCheckIn);
    }
    ArrivalRecord arrival = local_arrival();
    return post_exchange(*oob_, Phase::kCheckIn, "arrive", kArriveChannel, local, &arrival,
                         sizeof(arrival));
  }
  Status s = poll_exchange();
  if (s != COHORT_SUCCESS) return s;
  arrivals_.resize(size_);
  for (int r = 0; r < size_; ++r) std::memcpy(&arrivals_[r], payload_of(r), sizeof(ArrivalRecord));
  exchange_.request.reset();
  end_phase(Phase::kCheckIn);
  stage_ = Stage::kPeerInfo;
  return COHORT_IN_PROGRESS;
}

Status TeamImpl::step_dup() {
  int done = 0;
  int rc = MPI_Test(&dup_request_, &done, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    return finish_failed(
        failf(COHORT_ERR_MPI, "MPI_Comm_idup in phase check-in: %s", mpi_error_string(rc).c_str()));
  }
  if (!done) {
    if (now_ns() < dup_deadline_ns_) return COHORT_IN_PROGRESS;
    return finish_failed(failf(
        COHORT_ERR_TIMEOUT,
        "team creation timed out in phase check-in after %.2f s: MPI_Comm_idup of the "
        "communicator did not complete although every rank had confirmed: a rank gave up at the "
        "very moment the others confirmed, or stopped making progress. The communicator now has "
        "a pending collective; creating communicators from it may hang: abort the job",
        config_.init_timeout_s));
  }
  dup_ticket_.reset();  // the next creation on this communicator may post its dup
  MPI_Comm_set_errhandler(dup_comm_, MPI_ERRORS_RETURN);
  oob_ = std::make_unique<MpiOob>(dup_comm_);
  dup_comm_ = MPI_COMM_NULL;  // owned by oob_ now
  if (owns_user_comm_) {
    MPI_Comm_free(&user_comm_);
    owns_user_comm_ = false;
  }
  user_comm_ = MPI_COMM_NULL;
  end_phase(Phase::kCheckIn);
  stage_ = Stage::kPeerInfo;
  return COHORT_IN_PROGRESS;
}

Status TeamImpl::step_peer_info() {
  if (!exchange_.request) {
    PeerRecord local_peer;
    std::memset(&local_peer, 0, sizeof(local_peer));
    Status s = local_phase_status(Phase::kPeerInfo);
    if (!is_error(s)) s = gather_local_peer(config_.cuda_device, &local_peer);
    return post_exchange(*oob_, Phase::kPeerInfo, "peer-info", phase_channel(Phase::kPeerInfo), s,
                         &local_peer, sizeof(local_peer));
  }
  Status s = poll_exchange();
  if (s != COHORT_SUCCESS) return s;
  peers_.resize(size_);
  for (int r = 0; r < size_; ++r) std::memcpy(&peers_[r], payload_of(r), sizeof(PeerRecord));
  exchange_.request.reset();
  end_phase(Phase::kPeerInfo);
  stage_ = Stage::kLocalRanks;
  return COHORT_IN_PROGRESS;
}

Status TeamImpl::step_local_ranks() {
  if (!exchange_.request) {
    std::vector<uint64_t> host_ids(size_);
    for (int r = 0; r < size_; ++r) host_ids[r] = peers_[r].host_id;
    layout_ = compute_node_layout(host_ids);
    Status s = local_phase_status(Phase::kLocalRanks);
    std::vector<std::vector<int>> shared = find_shared_gpus(peers_);
    if (!is_error(s) && !shared.empty()) {
      if (config_.allow_shared_gpu) {
        COHORT_LOG_INFO(INIT, "%s: GPUs shared as allowed: %s", config_.name.c_str(),
                        describe_shared_gpus(peers_, shared).c_str());
      } else {
        s = fail(COHORT_ERR_INVALID_USAGE,
                 "duplicate GPU: " + describe_shared_gpus(peers_, shared));
      }
    }
    return post_exchange(*oob_, Phase::kLocalRanks, "local-ranks",
                         phase_channel(Phase::kLocalRanks), s, nullptr, 0);
  }
  Status s = poll_exchange();
  if (s != COHORT_SUCCESS) return s;
  exchange_.request.reset();
  end_phase(Phase::kLocalRanks);
  stage_ = Stage::kTopology;
  return COHORT_IN_PROGRESS;
}

Status TeamImpl::step_ready() {
  if (!exchange_.request) {
    Status s = local_phase_status(Phase::kReady);
    if (!is_error(s) && is_error(connect_status_)) s = fail(connect_status_, connect_error_);
    // The phase timings, then whether single copy works from this rank.
    int64_t record[kNumReportPhases + 1];
    std::memcpy(record, phase_ns_, sizeof(int64_t) * kNumReportPhases);
    record[kNumReportPhases] = single_copy_ok_ ? 1 : 0;
    return post_exchange(*oob_, Phase::kReady, "ready", phase_channel(Phase::kReady), s, record,
                         sizeof(record));
  }
  Status s = poll_exchange();
  if (s != COHORT_SUCCESS) return s;
  std::vector<std::vector<int64_t>> timings(size_, std::vector<int64_t>(kNumReportPhases));
  std::vector<char> single_copy_ok(size_);
  for (int r = 0; r < size_; ++r) {
    std::memcpy(timings[r].data(), payload_of(r), sizeof(int64_t) * kNumReportPhases);
    int64_t ok = 0;
    std::memcpy(&ok, payload_of(r) + sizeof(int64_t) * kNumReportPhases, sizeof(ok));
    single_copy_ok[r] = ok != 0;
  }
  enable_single_copy(single_copy_ok);
  exchange_.request.reset();
  const char *names[kNumReportPhases];
  for (int p = 0; p < kNumReportPhases; ++p) names[p] = phase_name(static_cast<Phase>(p));
  report_ = build_init_report(timings, names, kNumReportPhases);
  stage_ = Stage::kDone;
  status_ = COHORT_SUCCESS;
  // Every rank of the host has attached (it said so in ready): the name can go.
  if (host_channels_ && is_host_leader(rank_)) host_channels_->unlink();
  COHORT_LOG_INFO(INIT, "%s: ready: rank %d of %d, node %d of %d, local rank %d of %d, GPU %s",
                  config_.name.c_str(), rank_, size_, layout_.node_of_rank[rank_],
                  layout_.node_count, layout_.local_rank[rank_], layout_.local_size[rank_],
                  peers_[rank_].cuda_device < 0 ? "none" : peers_[rank_].bus_id);
  if (rank_ == 0) {
    COHORT_LOG_INFO(GRAPH,
                    "%s: plan: %d channels x %.1f GB/s, %s within hosts, %s to NICs, %d "
                    "hosts, hash %016llx",
                    config_.name.c_str(), plan_.channels, plan_.bw,
                    topo::path_type_name(plan_.intra_type), topo::path_type_name(plan_.net_type),
                    plan_.nodes, static_cast<unsigned long long>(plan_.hash));
    std::string text = format_init_report(report_, size_);
    text.pop_back();  // the logger ends the line
    COHORT_LOG_INFO(INIT, "%s: %s", config_.name.c_str(), text.c_str());
  }
  return COHORT_SUCCESS;
}

Status TeamImpl::post_exchange(Oob &oob, Phase phase, const char *step, int channel, Status local,
                               const void *payload, size_t payload_len) {
  std::vector<char> record(sizeof(PhaseHeader) + payload_len, 0);
  PhaseHeader header;
  std::memset(&header, 0, sizeof(header));
  header.magic = kRecordMagic;
  header.phase = static_cast<int32_t>(phase);
  header.status = local;
  if (is_error(local)) std::strncpy(header.detail, last_error().c_str(), kDetailBytes - 1);
  std::memcpy(record.data(), &header, sizeof(header));
  if (payload_len > 0) std::memcpy(record.data() + sizeof(header), payload, payload_len);
  exchange_.phase = phase;
  exchange_.step = step;
  exchange_.record_len = record.size();
  exchange_.deadline_ns = deadline_after(config_.init_timeout_s);
  Status s = oob.allgather(record.data(), record.size(), channel, &exchange_.request);
  if (is_error(s)) {
    return finish_failed(failf(s, "team creation failed in phase %s (%s): %s", phase_name(phase),
                               step, last_error().c_str()));
  }
  COHORT_LOG_TRACE(INIT, "%s: phase %s (%s) posted, local status %s", config_.name.c_str(),
                   phase_name(phase), step, cohort_status_string(local));
  return COHORT_IN_PROGRESS;
}

Status TeamImpl::poll_exchange() {
  Status s = poll_notices();
  if (is_error(s)) return s;
  s = exchange_.request->test();
  if (s == COHORT_IN_PROGRESS) {
    return now_ns() < exchange_.deadline_ns ? COHORT_IN_PROGRESS : timeout_failure();
  }
  if (is_error(s)) {
    return finish_failed(failf(s, "team creation failed in phase %s (%s): %s",
                               phase_name(exchange_.phase), exchange_.step, last_error().c_str()));
  }
  const char *records = exchange_.request->result();
  if (s = poll_notices(); is_error(s)) return s;  // a rank that gave up after sending its part
  for (int r = 0; r < size_; ++r) {
    PhaseHeader header;
    std::memcpy(&header, records + r * exchange_.record_len, sizeof(header));
    if (header.magic != kRecordMagic || header.phase != static_cast<int32_t>(exchange_.phase)) {
      return finish_failed(
          failf(COHORT_ERR_INVALID_USAGE,
                "team creation failed in phase %s: rank %d sent a record for another phase or "
                "program (magic 0x%x, phase %d): are ranks creating different teams on one "
                "communicator at once?",
                phase_name(exchange_.phase), r, header.magic, header.phase));
    }
  }
  return agreed_failure(records);
}

// Every rank holds the same records, so every rank picks the same first failing rank.
Status TeamImpl::agreed_failure(const char *records) {
  for (int r = 0; r < size_; ++r) {
    PhaseHeader header;
    std::memcpy(&header, records + r * exchange_.record_len, sizeof(header));
    if (header.status == COHORT_SUCCESS) continue;
    return finish_failed(cohort::agreed_failure("team creation", exchange_.phase, describe(r),
                                                static_cast<Status>(header.status), header.detail));
  }
  return COHORT_SUCCESS;
}

Status TeamImpl::timeout_failure() {
  bool known = false;
  std::vector<int> absent = exchange_.request->absent(&known);
  const char *phase = phase_name(exchange_.phase);
  if (!known) {
    return finish_failed(
        failf(COHORT_ERR_TIMEOUT,
              "team creation timed out in phase %s (%s) after %.2f s: the OOB allgather did not "
              "complete, and a caller-supplied OOB cannot tell which ranks are missing (create the "
              "team from an MPI communicator to have them named)",
              phase, exchange_.step, config_.init_timeout_s));
  }
  std::string who;
  constexpr size_t kDescribed = 8;
  for (size_t i = 0; i < absent.size() && i < kDescribed; ++i) {
    who += (i == 0 ? "" : "; ") + describe(absent[i]);
  }
  if (absent.size() > kDescribed) who += "; all missing: " + format_rank_list(absent);
  MissingText text = missing_text(exchange_.step);
  // Tell the ranks still waiting in this exchange why it ends, rather than let each wait out
  // its own timeout or, having received every part, go on alone.
  return finish_failed(notify_gave_up(failf(
      COHORT_ERR_TIMEOUT,
      "team creation timed out in phase %s after %.2f s: %zu of %d ranks "
      "%s: %s. %s",
      phase, config_.init_timeout_s, absent.size(), size_, text.what, who.c_str(), text.why)));
}

Status TeamImpl::notify_gave_up(Status status) {
  if (!private_oob_ready()) return status;
  PhaseHeader notice;
  std::memset(&notice, 0, sizeof(notice));
  notice.magic = kRecordMagic;
  notice.phase = static_cast<int32_t>(exchange_.phase);
  notice.status = status;
  std::strncpy(notice.detail, last_error().c_str(), kDetailBytes - 1);
  oob_->notify_all(&notice, sizeof(notice), kNoticeChannel);
  return status;
}

bool TeamImpl::private_oob_ready() const {
  return oob_ != nullptr && stage_ >= Stage::kPeerInfo && stage_ <= Stage::kReady;
}

Status TeamImpl::poll_notices() {
  if (!private_oob_ready()) return COHORT_SUCCESS;
  PhaseHeader notice;
  int from = -1;
  if (!oob_->poll_notice(&notice, sizeof(notice), kNoticeChannel, &from)) return COHORT_SUCCESS;
  notice.detail[kDetailBytes - 1] = '\0';
  Status status = is_error(static_cast<Status>(notice.status)) ? static_cast<Status>(notice.status)
                                                               : COHORT_ERR_INTERNAL;
  return finish_failed(failf(status, "team creation failed in phase %s: %s gave up: %s",
                             phase_name(exchange_.phase), describe(from).c_str(), notice.detail));
}

const char *TeamImpl::payload_of(int rank) const {
  return exchange_.request->result() + rank * exchange_.record_len + sizeof(PhaseHeader);
}

Status TeamImpl::local_phase_status(Phase phase) {
  const InjectedFailure &inject = config_.inject;
  if (!inject.active || inject.phase != phase || inject.rank != rank_) return COHORT_SUCCESS;
  if (inject.skew) return COHORT_SUCCESS;  // step_align alters the hash it reports
  if (inject.stall) {
    double stall_s = config_.init_timeout_s * 1.2 + 0.3;
    COHORT_LOG_WARN(INIT, "%s: injected stall of %.2f s in phase %s", config_.name.c_str(), stall_s,
                    phase_name(phase));
    usleep(static_cast<useconds_t>(stall_s * 1e6));
    return COHORT_SUCCESS;
  }
  return failf(COHORT_ERR_SYSTEM, "injected failure (COHORT_INJECT_FAILURE=%s:%d)",
               phase_name(phase), rank_);
}

void TeamImpl::end_phase(Phase phase) {
  int64_t now = now_ns();
  phase_ns_[static_cast<int>(phase)] = now - phase_start_ns_;
  phase_start_ns_ = now;
  COHORT_LOG_TRACE(INIT, "%s: phase %s done in %.3f ms", config_.name.c_str(), phase_name(phase),
                   phase_ns_[static_cast<int>(phase)] / 1e6);
}

Status TeamImpl::finish_failed(Status status) {
  error_ = last_error();
  status_ = status;
  stage_ = Stage::kFailed;
  release();
  COHORT_LOG_WARN(INIT, "%s: %s: %s", config_.name.c_str(), cohort_status_string(status),
                  error_.c_str());
  return fail(status, error_);
}

std::string TeamImpl::describe(int rank) const {
  if (rank >= 0 && rank < static_cast<int>(peers_.size())) {
    return describe_rank(peers_[rank].host_label, peers_[rank].pid, rank);
  }
  if (rank >= 0 && rank < static_cast<int>(arrivals_.size())) {
    return describe_rank(arrivals_[rank].host_label, arrivals_[rank].pid, rank);
  }
  return "rank " + std::to_string(rank);
}

}  // namespace cohort
