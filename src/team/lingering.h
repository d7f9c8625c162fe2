// Work a team must finish after its caller abandoned it.  Once this rank has confirmed a
// check-in, the others may already be inside the collective MPI_Comm_idup that follows; if
// this rank walked away (abort, or destroy during creation) they would wait in it forever
// and every later communicator creation in the job would hang behind it.  So the confirmed
// check-in and the dup go on here, in the background, and the result is freed.  Lingering
// work is progressed by every later team poll and, at the latest, at MPI_Finalize (through
// an attribute on MPI_COMM_SELF), each piece within its own deadline.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "team/checkin.h"

namespace cohort {

class Lingering {
 public:
  // Finishes a confirmed check-in (if any), its MPI_Comm_idup, and frees the results, by
  // `deadline_ns` at the latest.  owns_comm: also free `comm` when done.
  Lingering(std::unique_ptr<CheckIn> checkin, MPI_Comm comm, bool owns_comm, MPI_Comm dup,
            MPI_Request dup_request, int64_t deadline_ns);
  ~Lingering();
  bool progress();  // true when finished (or given up)
  // Keeps this process's place in the communicator's dup queue until the dup completes.
  void hold(std::unique_ptr<DupTicket> ticket) { ticket_ = std::move(ticket); }

 private:
  bool given_up(const char *what) const;

  std::unique_ptr<CheckIn> checkin_;
  std::unique_ptr<DupTicket> ticket_;
  MPI_Comm comm_;
  bool owns_comm_;
  MPI_Comm dup_;
  MPI_Request dup_request_;
  int64_t deadline_ns_;
};

void linger(std::unique_ptr<Lingering> work);
// Advances lingering work; cheap when there is none.
void progress_lingering();

}  // namespace cohort
