// Team lifecycle: creation driven to its end, readiness, abort, release, split.
#include "team/team.h"

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "core/oob_socket.h"
#include "core/oob_user.h"
#include "core/mpi_hooks.h"

namespace cohort {
Status TeamImpl::post_entry(EntryFactory make_entry, int size, int rank,
                            const cohort_team_config_t *config, std::shared_ptr<TeamImpl> *out) {
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  team->parts_.info.size = size;
  team->parts_.info.rank = rank;
  team->begin(config, make_entry);
  *out = std::move(team);
  return COHORT_SUCCESS;
}

Status TeamImpl::post_oob(const cohort_oob_t *oob, const cohort_team_config_t *config,
                          std::shared_ptr<TeamImpl> *out) {
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  team->parts_.oob = std::make_unique<UserOob>(*oob);
  team->parts_.info.size = team->parts_.oob->size();
  team->parts_.info.rank = team->parts_.oob->rank();
  team->begin(config, nullptr);
  *out = std::move(team);
  return COHORT_SUCCESS;
}

Status TeamImpl::post_socket(const cohort_unique_id_t &id, int size, int rank,
                             const cohort_team_config_t *config, std::shared_ptr<TeamImpl> *out) {
  std::unique_ptr<SocketOob> oob;
  Status s = SocketOob::create(id, size, rank, &oob);
  if (is_error(s)) return s;
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  team->parts_.oob = std::move(oob);
  team->parts_.info.size = size;
  team->parts_.info.rank = rank;
  team->begin(config, nullptr);
  *out = std::move(team);
  return COHORT_SUCCESS;
}

bool TeamImpl::uses_mpi() const {
  return !parts_.oob || parts_.oob->is_mpi();
}

// A config that does not resolve is this rank's status in check-in: every rank fails alike.
void TeamImpl::begin(const cohort_team_config_t *config, const EntryFactory &make_entry) {
  Status config_status = resolve_config(config, &parts_.config);
  const TeamConfig &resolved = parts_.config;
  creation_ = std::make_unique<Creation>(parts_, config_status, make_entry);
  parts_.info.name = resolved.name;
  public_name_ = resolved.name;
  public_config_.init_timeout = resolved.init_timeout_s;
  public_config_.cuda_device = resolved.cuda_device;
  public_config_.allow_shared_gpu = resolved.allow_shared_gpu ? 1 : 0;
  public_config_.name = public_name_.c_str();
  COHORT_LOG_INFO(INIT, "%s: creating, rank %d of %d over %s OOB, timeout %.3g s",
                  resolved.name.c_str(), parts_.info.rank, parts_.info.size,
                  make_entry                                           ? "the MPI"
                  : dynamic_cast<SocketOob *>(parts_.oob.get()) != nullptr ? "the socket"
                                                                           : "a caller's",
                  resolved.init_timeout_s);
}

TeamImpl::~TeamImpl() {
  if (creation_ && (mpi_usable_now() || !uses_mpi())) {
    creation_->abandon("rank " + std::to_string(parts_.info.rank) +
                       " destroyed the team during its creation");
  }
  release();
}

Status TeamImpl::progress() {
  if (mpi_hooks().progress_lingering != nullptr) mpi_hooks().progress_lingering();
  std::lock_guard<std::mutex> lock(mutex_);
  if (stage_ != Stage::kCreating) return ready_locked();
  if (uses_mpi() && !mpi_usable_now()) {
    return finish_failed(
        fail(COHORT_ERR_INVALID_USAGE, "team creation cannot continue: MPI is already finalised"));
  }
  Status s = creation_->progress();
  if (s == COHORT_IN_PROGRESS) return s;
  if (is_error(s)) return finish_failed(s);
  creation_.reset();
  stage_ = Stage::kReady;
  status_ = COHORT_SUCCESS;
  return COHORT_SUCCESS;
}

Status TeamImpl::wait() {
  Backoff backoff;
  uint64_t seen = 0;
  for (;;) {
    Status s = progress();
    if (s != COHORT_IN_PROGRESS) return s;
    uint64_t now_seen = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (creation_) now_seen = creation_->transitions();
    }
    if (now_seen != seen) backoff.reset();  // a new step: its messages come soon
    seen = now_seen;
    backoff.pause();
  }
}

Status TeamImpl::check_ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ready_locked();
}

Status TeamImpl::ready_locked() const {
  const std::string &name = parts_.config.name;
  switch (stage_) {
    case Stage::kReady: return COHORT_SUCCESS;
    case Stage::kAborted: return fail(COHORT_ERR_ABORTED, "team '" + name + "' was aborted");
    case Stage::kFailed:
      return fail(status_, "team '" + name + "' is unusable: its creation failed: " + error_);
    default:
      return fail(COHORT_ERR_INVALID_USAGE,
                  "team '" + name +
                      "' is still being created: call cohort_team_create_test() until it "
                      "returns COHORT_SUCCESS");
  }
}

Status TeamImpl::async_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (stage_) {
    case Stage::kReady: return COHORT_SUCCESS;
    case Stage::kAborted: return COHORT_ERR_ABORTED;
    case Stage::kFailed: return status_;
    default: return COHORT_IN_PROGRESS;
  }
}

void TeamImpl::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stage_ == Stage::kAborted) return;
  const TeamInfo &info = parts_.info;
  COHORT_LOG_INFO(INIT, "%s: aborted by the caller", info.name.c_str());
  if (creation_ && (mpi_usable_now() || !uses_mpi())) {
    creation_->abandon("rank " + std::to_string(info.rank) + " aborted team creation");
  }
  // Every peer's pending or next collective on this team ends, naming this rank.  Nothing
  // here calls MPI on a ready team (abort may come from another thread than MPI's): the
  // private communicator goes with the team.
  parts_.colls.stop(COHORT_ERR_ABORTED, "cohort_team_abort was called", stage_ == Stage::kReady);
  if (parts_.device) parts_.device->abort();  // this rank's kernels and every peer's stop
  if (stage_ == Stage::kReady) {
    parts_.transports.release();
  } else {
    release();
  }
  stage_ = Stage::kAborted;
  status_ = COHORT_ERR_ABORTED;
}

Status TeamImpl::finish_failed(Status status) {
  error_ = last_error();
  status_ = status;
  stage_ = Stage::kFailed;
  release();
  COHORT_LOG_WARN(INIT, "%s: %s: %s", parts_.config.name.c_str(), cohort_status_string(status),
                  error_.c_str());
  return fail(status, error_);
}

// Frees everything in reverse order of creation: the collectives end first (those a stream
// holds through host memory run to their end, the rest stop; none polls the transports after
// stop()), then the transports, the creation in flight, the OOB.
void TeamImpl::release() {
  parts_.colls.finish_staged();
  parts_.colls.stop(COHORT_ERR_ABORTED,
                    "team '" + parts_.config.name + "' went away before this collective finished",
                    false);
  parts_.device.reset();  // waits for this team's kernels, which end at the latest at abort
  parts_.transports.release();
  creation_.reset();
  parts_.oob.reset();
}

Status TeamImpl::split(int color, int key, const cohort_team_config_t *config,
                       std::shared_ptr<TeamImpl> *child) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Status s = ready_locked();
    if (is_error(s)) return s;
  }
  if (!parts_.oob->is_mpi() || mpi_hooks().split == nullptr) {
    return fail(COHORT_ERR_NOT_SUPPORTED,
                "split needs a team created from an MPI communicator; this one was made over a "
                "unique id or a caller-supplied OOB (create the children from new ids)");
  }
  return mpi_hooks().split(*this, color, key, config, child);
}

}  // namespace cohort
