#include "team/lingering.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "core/oob_mpi.h"

namespace cohort {
namespace {

struct LingeringList {
  std::mutex mutex;
  std::vector<std::unique_ptr<Lingering>> work;
  bool finalize_hook = false;
};

LingeringList &lingering() {
  static LingeringList *list = new LingeringList();
  return *list;
}

// Runs at the start of MPI_Finalize (attributes of MPI_COMM_SELF are deleted first).
int finish_at_finalize(MPI_Comm, int, void *, void *) {
  Backoff backoff;
  for (;;) {
    progress_lingering();
    {
      std::lock_guard<std::mutex> lock(lingering().mutex);
      if (lingering().work.empty()) return MPI_SUCCESS;
    }
    backoff.pause();
  }
}

void install_finalize_hook_locked(LingeringList &list) {
  if (list.finalize_hook || !mpi_usable()) return;
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finish_at_finalize, &keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  list.finalize_hook = true;
}

}  // namespace

Lingering::Lingering(std::unique_ptr<CheckIn> checkin, MPI_Comm comm, bool owns_comm, MPI_Comm dup,
                     MPI_Request dup_request, int64_t deadline_ns, std::string why)
    : checkin_(std::move(checkin)),
      comm_(comm),
      owns_comm_(owns_comm),
      dup_(dup),
      dup_request_(dup_request),
      deadline_ns_(deadline_ns),
      why_(std::move(why)) {}

Lingering::~Lingering() {
  if (owns_comm_ && comm_ != MPI_COMM_NULL && mpi_usable()) MPI_Comm_free(&comm_);
}

bool Lingering::progress() {
  if (!mpi_usable()) return true;
  if (checkin_) {
    Status s = checkin_->progress();
    if (s == COHORT_IN_PROGRESS) return false;
    if (s != COHORT_SUCCESS) return true;  // the check-in failed everywhere: no dup follows
    if (!checkin_->dup_turn()) return given_up("its turn to post MPI_Comm_idup never came");
    ticket_ = checkin_->take_ticket();
    checkin_.reset();
    MPI_Comm_idup(comm_, &dup_, &dup_request_);
  }
  if (dup_request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Test(&dup_request_, &done, MPI_STATUS_IGNORE);
  if (done) {
    tell_and_free_dup();
    return true;
  }
  return given_up("its MPI_Comm_idup did not complete: some rank never joined it");
}

// The others are in peer-info on the dup now, or soon: they fail at once with `why_`.
void Lingering::tell_and_free_dup() {
  MpiOob oob(dup_);  // frees the dup when it goes (its sends finish on their own)
  dup_ = MPI_COMM_NULL;
  PhaseHeader notice = phase_header(Phase::kPeerInfo, COHORT_ERR_ABORTED);
  std::strncpy(notice.detail, why_.c_str(), kDetailBytes - 1);
  oob.notify_all(&notice, sizeof(notice), kNoticeChannel);
}

// False until the deadline, then says what never happened and gives the work up.
bool Lingering::given_up(const char *what) const {
  if (now_ns() < deadline_ns_) return false;
  COHORT_LOG_WARN(INIT,
                  "an abandoned team creation was given up at its deadline: %s; communicator "
                  "creation on its parent may hang",
                  what);
  return true;
}

void linger(std::unique_ptr<Lingering> work, double seconds) {
  const int64_t deadline = deadline_after(seconds);
  Backoff backoff;
  while (now_ns() < deadline) {
    if (work->progress()) return;
    backoff.pause();
  }
  LingeringList &list = lingering();
  std::lock_guard<std::mutex> lock(list.mutex);
  install_finalize_hook_locked(list);
  list.work.push_back(std::move(work));
}

void progress_lingering() {
  LingeringList &list = lingering();
  std::lock_guard<std::mutex> lock(list.mutex);
  if (list.work.empty()) return;
  size_t kept = 0;
  for (auto &work : list.work) {
    if (!work->progress()) list.work[kept++] = std::move(work);
  }
  list.work.resize(kept);
}

}  // namespace cohort
