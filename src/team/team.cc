// Team lifecycle outside creation: readiness, abort, release, split.
#include "team/team.h"

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "team/split_order.h"

namespace cohort {
namespace {

constexpr int kSplitChannelBase = 16;
constexpr int kSplitChannels = 4096;

struct SplitRecord {
  PhaseHeader header;
  SplitEntry entry;
};

}  // namespace

Team::~Team() { release(); }

Status Team::check_ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
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

Status Team::async_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (stage_) {
    case Stage::kDone: return COHORT_SUCCESS;
    case Stage::kAborted: return COHORT_ERR_ABORTED;
    case Stage::kFailed: return status_;
    default: return COHORT_IN_PROGRESS;
  }
}

void Team::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stage_ == Stage::kAborted) return;
  COHORT_LOG_INFO(INIT, "%s: aborted by the caller", config_.name.c_str());
  release();
  stage_ = Stage::kAborted;
  status_ = COHORT_ERR_ABORTED;
}

// Frees everything MPI-side in reverse order of creation.  Pending receives are cancelled by
// the request's destructor; an MPI_Comm_idup cannot be cancelled, so one still pending is
// left to finish on its own (it only is if a rank vanished after confirming check-in).
void Team::release() {
  exchange_.request.reset();
  checkin_oob_.reset();
  oob_.reset();
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

Status Team::split(int color, int key, const cohort_team_config_t *config,
                   std::shared_ptr<Team> *child) {
  Status s = check_ready();
  if (is_error(s)) return s;
  std::unique_lock<std::mutex> lock(mutex_);
  auto *mpi = dynamic_cast<MpiOob *>(oob_.get());
  if (mpi == nullptr) {
    return fail(COHORT_ERR_NOT_SUPPORTED,
                "split needs a team created from an MPI communicator; this one uses a "
                "caller-supplied OOB");
  }
  SplitRecord mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.header.magic = kRecordMagic;
  mine.header.phase = -1;
  mine.entry = {color, key};
  if (color < 0 && color != COHORT_SPLIT_NOCOLOR) {
    failf(COHORT_ERR_INVALID_ARG, "color=%d: give a color >= 0 or COHORT_SPLIT_NOCOLOR", color);
    mine.header.status = COHORT_ERR_INVALID_ARG;
    std::strncpy(mine.header.detail, last_error().c_str(), kDetailBytes - 1);
  }
  int channel = kSplitChannelBase + split_sequence_++ % kSplitChannels;
  std::unique_ptr<OobRequest> request;
  s = mpi->allgather(&mine, sizeof(mine), channel, &request);
  if (is_error(s)) return s;
  int64_t deadline = now_ns() + static_cast<int64_t>(config_.init_timeout_s * 1e9);
  Backoff backoff;
  while ((s = request->test()) == COHORT_IN_PROGRESS) {
    if (now_ns() > deadline) {
      bool known = false;
      std::vector<int> absent = request->absent(&known);
      std::string who;
      for (int r : absent) who += (who.empty() ? "" : "; ") + describe(r);
      return failf(COHORT_ERR_TIMEOUT,
                   "split of team '%s' timed out after %.2f s: %zu of %d ranks did not call "
                   "split: %s",
                   config_.name.c_str(), config_.init_timeout_s, absent.size(), size_, who.c_str());
    }
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
    SplitRecord record;
    std::memcpy(&record, request->result() + r * sizeof(SplitRecord), sizeof(record));
    if (record.header.status != COHORT_SUCCESS) {
      record.header.detail[kDetailBytes - 1] = '\0';
      return failf(static_cast<Status>(record.header.status),
                   "split of team '%s' failed: %s reported %s: %s", config_.name.c_str(),
                   describe(r).c_str(),
                   cohort_status_string(static_cast<Status>(record.header.status)),
                   record.header.detail);
    }
    entries[r] = record.entry;
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
  int rc = MPI_Comm_create_group(mpi->comm(), child_group, channel, &child_comm);
  MPI_Group_free(&child_group);
  MPI_Group_free(&parent_group);
  if (rc != MPI_SUCCESS) {
    return failf(COHORT_ERR_MPI, "split of team '%s': MPI_Comm_create_group: %s",
                 config_.name.c_str(), mpi_error_string(rc).c_str());
  }
  cohort_team_config_t inherited = public_config_;
  std::string child_name = config_.name + "/" + std::to_string(color);
  inherited.name = child_name.c_str();
  lock.unlock();
  std::shared_ptr<Team> created;
  post_mpi(child_comm, true, config != nullptr ? config : &inherited, &created);
  s = created->wait();
  if (is_error(s)) return s;
  *child = std::move(created);
  return COHORT_SUCCESS;
}

}  // namespace cohort
