// OOB over TCP, for teams created from a unique id without MPI (NCCL's bootstrap, without its
// root thread).  A star: the rank in the id's creating process serves (it claims the id), the
// others connect to the id's address and present its secret.  The server gathers each
// exchange's blocks, sends every member the result, relays notices, and reports which blocks
// have arrived, so that a member's timeout names the missing ranks too.  A server's failure
// (a member that presents a rank twice, a different size, or closes mid-exchange) reaches
// every member as an error that names it.
//
// Requests must not outlive their SocketOob (the team frees its creation before its OOB).
#pragma once

#include <memory>

#include "cohort.h"
#include "core/oob.h"

namespace cohort {

struct SocketState;

class SocketOob final : public Oob {
 public:
  // Checks the id, size and rank (the error names what is wrong); connects nothing yet.
  static Status create(const cohort_unique_id_t &id, int size, int rank,
                       std::unique_ptr<SocketOob> *out);
  ~SocketOob() override;

  int size() const override;
  int rank() const override;
  Status allgather(const void *data, size_t len, int channel,
                   std::unique_ptr<OobRequest> *request) override;
  void notify_all(const void *data, size_t len, int channel) override;
  bool poll_notice(void *data, size_t len, int channel, int *from) override;

 private:
  explicit SocketOob(std::unique_ptr<SocketState> state);
  std::unique_ptr<SocketState> state_;
};

}  // namespace cohort
