// Work a team must finish after its caller abandoned it.  Once this rank has confirmed a
// check-in, the others may already be inside the collective MPI_Comm_idup that follows; if
// this rank walked away (abort, or destroy during creation) they would wait in it forever
// and every later communicator creation in the job would hang behind it.  So the confirmed
// check-in and the dup go on here, in the background, and the result is freed.  Lingering
// work is progressed by every later team poll and, at the latest, at MPI_Finalize (through
// an attribute on MPI_COMM_SELF), each piece within its own deadline.  Once the dup has
// completed, the others (then in peer-info) get a notice saying why this rank left, so they
// fail at once rather than at their timeout.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "team/checkin.h"

namespace cohort {

class Lingering {
 public:
  // Finishes a confirmed check-in (if any), its MPI_Comm_idup, and frees the results, by
  // `deadline_ns` at the latest; tells the others `why` (COHORT_ERR_ABORTED) on the dup.
  // owns_comm: also free `comm` when done.
  Lingering(std::unique_ptr<CheckIn> checkin, MPI_Comm comm, bool owns_comm, MPI_Comm dup,
            MPI_Request dup_request, int64_t deadline_ns, std::string why);
  ~Lingering();
  bool progress();  // true when finished (or given up)
  // Keeps this process's place in the communicator's dup queue until the dup completes.
  void hold(std::unique_ptr<DupTicket> ticket) { ticket_ = std::move(ticket); }

 private:
  bool given_up(const char *what) const;
  void tell_and_free_dup();

  std::unique_ptr<CheckIn> checkin_;
  std::unique_ptr<DupTicket> ticket_;
  MPI_Comm comm_;
  bool owns_comm_;
  MPI_Comm dup_;
  MPI_Request dup_request_;
  int64_t deadline_ns_;
  std::string why_;
};

// Progresses `work` here for up to `seconds` (the others are in the same creation and move
// too), then leaves what is left to the background.
void linger(std::unique_ptr<Lingering> work, double seconds = 0);
// Advances lingering work; cheap when there is none.
void progress_lingering();

}  // namespace cohort
