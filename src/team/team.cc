// Team lifecycle outside creation: readiness, abort, release, split.
#include "team/team.h"

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
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

TeamImpl::~TeamImpl() {
  abandon_creation();
  release();
}

Status TeamImpl::check_ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ready_locked();
}

Status TeamImpl::ready_locked() const {
  switch (stage_) {
    case Stage::kDone: return COHORT_SUCCESS;
    case Stage::kAborted:
      return fail(COHORT_ERR_ABORTED, "team '" + config_.name + "' was aborted");
    case Stage::kFailed:
      return fail(status_,
                  "team '" + config_.name + "' is unusable: its creation failed: " + error_);
    default:
      return fail(COHORT_ERR_INVALID_USAGE,
                  "team '" + config_.name +
                      "' is still being created: call cohort_team_create_test() until it "
                      "returns COHORT_SUCCESS");
  }
}

Status TeamImpl::async_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (stage_) {
    case Stage::kDone: return COHORT_SUCCESS;
    case Stage::kAborted: return COHORT_ERR_ABORTED;
    case Stage::kFailed: return status_;
    default: return COHORT_IN_PROGRESS;
  }
}

void TeamImpl::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stage_ == Stage::kAborted) return;
  COHORT_LOG_INFO(INIT, "%s: aborted by the caller", config_.name.c_str());
  abandon_creation();
  release();
  stage_ = Stage::kAborted;
  status_ = COHORT_ERR_ABORTED;
}

// Leaves a creation in flight so that no peer is stranded: before this rank confirmed its
// check-in, the others are told the attempt is dead; after, the check-in and dup finish in
// the background (lingering.h); in the later phases the others get a notice and fail at once.
void TeamImpl::abandon_creation() {
  if (stage_ >= Stage::kDone || !mpi_usable()) return;
  std::string reason = "rank " + std::to_string(rank_) + " aborted team creation";
  if (stage_ == Stage::kCheckIn && checkin_) {
    if (!checkin_->confirmed()) {
      checkin_->abandon(reason);
      return;
    }
    linger(std::make_unique<Lingering>(std::move(checkin_), user_comm_, owns_user_comm_,
                                       MPI_COMM_NULL, MPI_REQUEST_NULL,
                                       deadline_after(config_.init_timeout_s)));
    owns_user_comm_ = false;
  } else if (stage_ == Stage::kDup) {
    auto work = std::make_unique<Lingering>(nullptr, user_comm_, owns_user_comm_, dup_comm_,
                                            dup_request_, dup_deadline_ns_);
    work->hold(std::move(dup_ticket_));
    linger(std::move(work));
    owns_user_comm_ = false;
    dup_comm_ = MPI_COMM_NULL;
    dup_request_ = MPI_REQUEST_NULL;
  } else if (private_oob_ready()) {
    fail(COHORT_ERR_ABORTED, reason);
    notify_gave_up(COHORT_ERR_ABORTED);
  }
}

// Frees everything MPI-side in reverse order of creation.  Pending receives are cancelled by
// the request's destructor; an MPI_Comm_idup cannot be cancelled, so one still pending is
// left to finish on its own (it only is if a rank vanished after confirming check-in).
void TeamImpl::release() {
  for (const std::shared_ptr<CollRequest> &r : queue_) {
    r->status = COHORT_ERR_ABORTED;
    r->error = "team '" + config_.name + "' was aborted before this collective finished";
  }
  queue_.clear();
  release_ucx();
  exchange_.request.reset();
  checkin_.reset();
  oob_.reset();
  dup_ticket_.reset();
  if (!mpi_usable()) return;
  if (dup_request_ != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Test(&dup_request_, &done, MPI_STATUS_IGNORE);
    if (done) {
      MPI_Comm_free(&dup_comm_);
    } else {
      COHORT_LOG_WARN(INIT, "%s: MPI_Comm_idup still pending at release; leaving it",
                      config_.name.c_str());
    }
  }
  if (owns_user_comm_ && user_comm_ != MPI_COMM_NULL) MPI_Comm_free(&user_comm_);
  owns_user_comm_ = false;
  user_comm_ = MPI_COMM_NULL;
}

// Split agrees on membership through a check-in on the parent's private communicator (so
// a rank that never calls split is named, and no rank enters the collective child creation
// unless every rank confirmed), then builds the child communicator over the members only.
Status TeamImpl::split(int color, int key, const cohort_team_config_t *config,
                       std::shared_ptr<TeamImpl> *child) {
  std::unique_lock<std::mutex> lock(mutex_);
  Status s = ready_locked();
  if (is_error(s)) return s;
  auto *mpi = dynamic_cast<MpiOob *>(oob_.get());
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
  options.timeout_s = config_.init_timeout_s;
  std::string what = "split of team '" + config_.name + "'";
  options.what = what.c_str();
  options.payload[0] = color;
  options.payload[1] = key;
  options.known = arrivals_;
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
      return fail(COHORT_ERR_ABORTED, "team '" + config_.name + "' was aborted during split");
    }
  }
  if (is_error(s)) return s;
  std::vector<SplitEntry> entries(size_);
  for (int r = 0; r < size_; ++r) {
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
                 config_.name.c_str(), mpi_error_string(rc).c_str());
  }
  cohort_team_config_t inherited = public_config_;
  std::string child_name = config_.name + "/" + std::to_string(color);
  inherited.name = child_name.c_str();
  std::shared_ptr<TeamImpl> created;
  post_mpi(child_comm, true, config != nullptr ? config : &inherited, &created);
  s = created->wait();
  if (is_error(s)) return s;
  *child = std::move(created);
  return COHORT_SUCCESS;
}

}  // namespace cohort
