// OOB over an MPI communicator: the allgather is point-to-point (each rank sends its block to
// every other), so a timed-out exchange knows exactly which ranks never sent, and its
// receives can be cancelled.  A nonblocking collective could do neither.
#pragma once

#include <mpi.h>

#include "core/oob.h"

namespace cohort {

class MpiOob final : public Oob {
 public:
  // Channel c of this OOB uses MPI tag tag_base + c (or tag_base - c when tag_base is the
  // top of the tag range).  With owns_comm the communicator is freed by the destructor.
  MpiOob(MPI_Comm comm, int tag_base, bool descending_tags, bool owns_comm);
  ~MpiOob() override;
  MpiOob(const MpiOob &) = delete;
  MpiOob &operator=(const MpiOob &) = delete;

  int size() const override { return size_; }
  int rank() const override { return rank_; }
  const char *kind() const override { return "mpi"; }
  MPI_Comm comm() const { return comm_; }
  Status allgather(const void *data, size_t len, int channel,
                   std::unique_ptr<OobRequest> *request) override;
  void notify_all(const void *data, size_t len, int channel) override;
  bool poll_notice(void *data, size_t len, int channel, int *from) override;

 private:
  int tag_of(int channel) const {
    return descending_tags_ ? tag_base_ - channel : tag_base_ + channel;
  }

  MPI_Comm comm_;
  int tag_base_;
  bool descending_tags_;
  bool owns_comm_;
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
