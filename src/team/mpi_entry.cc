#include "team/mpi_entry.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/oob_mpi.h"
#include "team/lingering.h"

namespace cohort {
namespace {

// How long an abandoning rank drives its confirmed check-in and dup itself before leaving
// them to the background: the others are in the same creation, so it takes milliseconds.
constexpr double kAbandonSeconds = 1.0;

}  // namespace

MpiEntry::MpiEntry(MPI_Comm comm, bool owns_comm, double timeout_s, Status local,
                   const std::string &detail)
    : user_comm_(comm), owns_user_comm_(owns_comm), timeout_s_(timeout_s) {
  CheckIn::Options options;
  options.comm = comm;
  options.tag_base = mpi_tag_upper_bound();
  options.timeout_s = timeout_s;
  options.local_status = local;
  options.local_detail = detail;
  checkin_ = std::make_unique<CheckIn>(options);
}

// Frees everything MPI-side.  An MPI_Comm_idup cannot be cancelled, so one still pending is
// left to finish on its own (it only is if a rank vanished after confirming check-in).
MpiEntry::~MpiEntry() {
  checkin_.reset();
  ticket_.reset();
  if (!mpi_usable()) return;
  if (dup_request_ != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Test(&dup_request_, &done, MPI_STATUS_IGNORE);
    if (done) {
      MPI_Comm_free(&dup_);
    } else {
      COHORT_LOG_WARN(INIT, "MPI_Comm_idup still pending when its team went; leaving it");
    }
  }
  if (dup_ != MPI_COMM_NULL && dup_request_ == MPI_REQUEST_NULL) MPI_Comm_free(&dup_);
  if (owns_user_comm_ && user_comm_ != MPI_COMM_NULL) MPI_Comm_free(&user_comm_);
}

Status MpiEntry::progress() {
  if (checkin_) return check_in();
  if (dup_request_ != MPI_REQUEST_NULL) return poll_dup();
  return COHORT_SUCCESS;
}

Status MpiEntry::check_in() {
  Status s = checkin_->progress();
  if (s != COHORT_SUCCESS) return s;
  if (!checkin_->dup_turn()) return wait_dup_turn();
  for (const CheckInRecord &record : checkin_->records()) arrivals_.push_back(record.who);
  ticket_ = checkin_->take_ticket();
  checkin_.reset();
  int rc = MPI_Comm_idup(user_comm_, &dup_, &dup_request_);
  if (rc != MPI_SUCCESS) {
    return failf(COHORT_ERR_MPI, "MPI_Comm_idup in phase check-in: %s",
                 mpi_error_string(rc).c_str());
  }
  dup_deadline_ns_ = deadline_after(timeout_s_);
  return COHORT_IN_PROGRESS;
}

// Checked in, but a creation posted earlier on this communicator (one still being created,
// or one abandoned and finishing in the background) has not decided on its MPI_Comm_idup
// yet; that dup must come first.  Bounded by the creation timeout.
Status MpiEntry::wait_dup_turn() {
  if (dup_deadline_ns_ == 0) dup_deadline_ns_ = deadline_after(timeout_s_);
  if (now_ns() < dup_deadline_ns_) return COHORT_IN_PROGRESS;
  return failf(COHORT_ERR_TIMEOUT,
               "team creation timed out in phase check-in after %.2f s: every rank checked in, "
               "but a team creation posted earlier on this communicator by this process has not "
               "finished its check-in and MPI_Comm_idup, which must come first. Progress (or "
               "abort) the earlier creation too: cohort_team_create_test on each handle",
               timeout_s_);
}

Status MpiEntry::poll_dup() {
  int done = 0;
  int rc = MPI_Test(&dup_request_, &done, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    return failf(COHORT_ERR_MPI, "MPI_Comm_idup in phase check-in: %s",
                 mpi_error_string(rc).c_str());
  }
  if (!done) {
    if (now_ns() < dup_deadline_ns_) return COHORT_IN_PROGRESS;
    return failf(
        COHORT_ERR_TIMEOUT,
        "team creation timed out in phase check-in after %.2f s: MPI_Comm_idup of the "
        "communicator did not complete although every rank had confirmed: a rank gave up at the "
        "very moment the others confirmed, or stopped making progress. The communicator now has "
        "a pending collective; creating communicators from it may hang: abort the job",
        timeout_s_);
  }
  ticket_.reset();  // the next creation on this communicator may post its dup
  MPI_Comm_set_errhandler(dup_, MPI_ERRORS_RETURN);
  if (owns_user_comm_) MPI_Comm_free(&user_comm_);
  owns_user_comm_ = false;
  user_comm_ = MPI_COMM_NULL;
  return COHORT_SUCCESS;
}

std::unique_ptr<Oob> MpiEntry::take_oob() {
  MPI_Comm comm = dup_;
  dup_ = MPI_COMM_NULL;
  return std::make_unique<MpiOob>(comm);
}

void MpiEntry::abandon(const std::string &why) {
  if (!mpi_usable()) return;
  if (checkin_ && !checkin_->confirmed()) {
    checkin_->abandon(why);
    return;
  }
  if (!checkin_ && dup_request_ == MPI_REQUEST_NULL) return;  // nothing in flight
  auto work = std::make_unique<Lingering>(std::move(checkin_), user_comm_, owns_user_comm_, dup_,
                                          dup_request_, deadline_after(timeout_s_), why);
  work->hold(std::move(ticket_));
  owns_user_comm_ = false;
  dup_ = MPI_COMM_NULL;
  dup_request_ = MPI_REQUEST_NULL;
  linger(std::move(work), kAbandonSeconds);
}

}  // namespace cohort
