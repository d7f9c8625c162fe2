// Team lifecycle: creation driven to its end, readiness, abort, release, split.
#include "team/team.h"

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "core/oob_mpi.h"
#include "core/oob_socket.h"
#include "core/oob_user.h"
#include "team/lingering.h"
#include "team/split_order.h"

namespace cohort {
namespace {

// Split's tags on the private communicator (creation phases use tags 0-15): its check-in
// (one tag per attempt, 100-163), and MPI_Comm_create_group's own messages, which must never
// meet a left-over check-in one.
constexpr int kSplitTagBase = 100;
constexpr int kCreateGroupTag = 100 + kCheckInTagWindow;

}  // namespace

Status TeamImpl::post_mpi(MPI_Comm comm, bool owns_comm, const cohort_team_config_t *config,
                          std::shared_ptr<TeamImpl> *out) {
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  MPI_Comm_size(comm, &team->parts_.info.size);
  MPI_Comm_rank(comm, &team->parts_.info.rank);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  log_set_rank(world_rank);
  team->begin(config, comm, owns_comm);
  *out = std::move(team);
  return COHORT_SUCCESS;
}

Status TeamImpl::post_oob(const cohort_oob_t *oob, const cohort_team_config_t *config,
                          std::shared_ptr<TeamImpl> *out) {
  std::shared_ptr<TeamImpl> team(new TeamImpl());
  team->parts_.oob = std::make_unique<UserOob>(*oob);
  team->parts_.info.size = team->parts_.oob->size();
  team->parts_.info.rank = team->parts_.oob->rank();
  team->begin(config, MPI_COMM_NULL, false);
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
  team->begin(config, MPI_COMM_NULL, false);
  *out = std::move(team);
  return COHORT_SUCCESS;
}

bool TeamImpl::uses_mpi() const {
  return !parts_.oob || dynamic_cast<MpiOob *>(parts_.oob.get()) != nullptr;
}

// A config that does not resolve is this rank's status in check-in: every rank fails alike.
void TeamImpl::begin(const cohort_team_config_t *config, MPI_Comm comm, bool owns_comm) {
  Status config_status = resolve_config(config, &parts_.config);
  const TeamConfig &resolved = parts_.config;
  creation_ = std::make_unique<Creation>(parts_, config_status, comm, owns_comm);
  parts_.info.name = resolved.name;
  public_name_ = resolved.name;
  public_config_.init_timeout = resolved.init_timeout_s;
  public_config_.cuda_device = resolved.cuda_device;
  public_config_.allow_shared_gpu = resolved.allow_shared_gpu ? 1 : 0;
  public_config_.name = public_name_.c_str();
  COHORT_LOG_INFO(INIT, "%s: creating, rank %d of %d over %s OOB, timeout %.3g s",
                  resolved.name.c_str(), parts_.info.rank, parts_.info.size,
                  comm != MPI_COMM_NULL                                ? "the MPI"
                  : dynamic_cast<SocketOob *>(parts_.oob.get()) != nullptr ? "the socket"
                                                                           : "a caller's",
                  resolved.init_timeout_s);
}

TeamImpl::~TeamImpl() {
  if (creation_ && (mpi_usable() || !uses_mpi())) {
    creation_->abandon("rank " + std::to_string(parts_.info.rank) +
                       " destroyed the team during its creation");
  }
  release();
}

Status TeamImpl::progress() {
  progress_lingering();
  std::lock_guard<std::mutex> lock(mutex_);
  if (stage_ != Stage::kCreating) return ready_locked();
  if (uses_mpi() && !mpi_usable()) {
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
  if (creation_ && (mpi_usable() || !uses_mpi())) {
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

// Split agrees on membership through a check-in on the parent's private communicator (so
// a rank that never calls split is named, and no rank enters the collective child creation
// unless every rank confirmed), then builds the child communicator over the members only.
Status TeamImpl::split(int color, int key, const cohort_team_config_t *config,
                       std::shared_ptr<TeamImpl> *child) {
  std::unique_lock<std::mutex> lock(mutex_);
  Status s = ready_locked();
  if (is_error(s)) return s;
  const TeamConfig &team_config = parts_.config;
  auto *mpi = dynamic_cast<MpiOob *>(parts_.oob.get());
  if (mpi == nullptr) {
    return fail(COHORT_ERR_NOT_SUPPORTED,
                "split needs a team created from an MPI communicator; this one uses a "
                "caller-supplied OOB");
  }
  if (!mpi_usable()) return fail(COHORT_ERR_INVALID_USAGE, "split: MPI is already finalised");
  CheckIn::Options options;
  options.comm = mpi->comm();
  options.tag_base = kSplitTagBase;
  options.tags_ascend = true;
  options.timeout_s = team_config.init_timeout_s;
  std::string what = "split of team '" + team_config.name + "'";
  options.what = what.c_str();
  options.payload[0] = color;
  options.payload[1] = key;
  options.known = parts_.info.arrivals;
  if (color < 0 && color != COHORT_SPLIT_NOCOLOR) {
    options.local_status =
        failf(COHORT_ERR_INVALID_ARG, "color=%d: give a color >= 0 or COHORT_SPLIT_NOCOLOR", color);
    options.local_detail = last_error();
  }
  CheckIn checkin(options);
  Backoff backoff;
  while ((s = checkin.progress()) == COHORT_IN_PROGRESS) {
    lock.unlock();
    backoff.pause();
    lock.lock();
    if (stage_ == Stage::kAborted) {
      return fail(COHORT_ERR_ABORTED, "team '" + team_config.name + "' was aborted during split");
    }
  }
  if (is_error(s)) return s;
  std::vector<SplitEntry> entries(parts_.info.size);
  for (int r = 0; r < parts_.info.size; ++r) {
    entries[r] = {checkin.records()[r].payload[0], checkin.records()[r].payload[1]};
  }
  std::vector<int> members = split_members(entries, color);
  if (members.empty()) {
    *child = nullptr;
    return COHORT_SUCCESS;
  }
  MPI_Group parent_group, child_group;
  MPI_Comm child_comm = MPI_COMM_NULL;
  MPI_Comm_group(mpi->comm(), &parent_group);
  MPI_Group_incl(parent_group, static_cast<int>(members.size()), members.data(), &child_group);
  MPI_Comm parent_comm = mpi->comm();
  lock.unlock();  // collective over the members: an abort must not wait for it
  int rc = MPI_Comm_create_group(parent_comm, child_group, kCreateGroupTag, &child_comm);
  MPI_Group_free(&child_group);
  MPI_Group_free(&parent_group);
  if (rc != MPI_SUCCESS) {
    return failf(COHORT_ERR_MPI, "split of team '%s': MPI_Comm_create_group: %s",
                 team_config.name.c_str(), mpi_error_string(rc).c_str());
  }
  cohort_team_config_t inherited = public_config_;
  std::string child_name = team_config.name + "/" + std::to_string(color);
  inherited.name = child_name.c_str();
  std::shared_ptr<TeamImpl> created;
  post_mpi(child_comm, true, config != nullptr ? config : &inherited, &created);
  s = created->wait();
  if (is_error(s)) return s;
  *child = std::move(created);
  return COHORT_SUCCESS;
}

}  // namespace cohort
