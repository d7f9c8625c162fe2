// OOB over an MPI communicator: the allgather is point-to-point (each rank sends its block to
// every other), so a timed-out exchange knows exactly which ranks never sent, and its
// receives can be cancelled.  A nonblocking collective could do neither.
#pragma once

#include <mpi.h>

#include "core/oob.h"

namespace cohort {

class MpiOob final : public Oob {
 public:
  // Takes ownership of `comm` (a private communicator: channel c is MPI tag c) and frees it.
  explicit MpiOob(MPI_Comm comm);
  ~MpiOob() override;
  MpiOob(const MpiOob &) = delete;
  MpiOob &operator=(const MpiOob &) = delete;

  int size() const override { return size_; }
  int rank() const override { return rank_; }
  bool is_mpi() const override { return true; }
  MPI_Comm comm() const { return comm_; }
  Status allgather(const void *data, size_t len, int channel,
                   std::unique_ptr<OobRequest> *request) override;
  void notify_all(const void *data, size_t len, int channel) override;
  bool poll_notice(void *data, size_t len, int channel, int *from) override;

 private:
  MPI_Comm comm_;
  int size_ = 0;
  int rank_ = 0;
};

// Largest MPI tag usable on any communicator (MPI_TAG_UB of MPI_COMM_WORLD).
int mpi_tag_upper_bound();

// True when MPI calls are allowed now (initialised and not finalised).
bool mpi_usable();

// "MPI_ERR_...: text" for an MPI return code.
std::string mpi_error_string(int code);

}  // namespace cohort
