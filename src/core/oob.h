// Out-of-band exchange used to create teams: a nonblocking allgather with a test, as UCC's
// ucc_oob_coll.  Requests own their buffers and release (cancel) themselves when destroyed,
// so a timed-out or aborted exchange leaves nothing behind that blocks later MPI use.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace cohort {

class OobRequest {
 public:
  virtual ~OobRequest() = default;
  // COHORT_SUCCESS once every rank's block arrived, COHORT_IN_PROGRESS before, or an error.
  virtual Status test() = 0;
  // size() * len bytes, rank r's block at r * len; complete after test() succeeded.
  virtual const char *result() const = 0;
  // Ranks whose block has not arrived yet.  *known is false when the OOB cannot tell.
  virtual std::vector<int> absent(bool *known) const = 0;
  // When absent() cannot tell: what this rank knows instead ("" if nothing).
  virtual std::string absence_note() const { return ""; }
};

class Oob {
 public:
  virtual ~Oob() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // An MPI communicator (the MPI part of the library's MpiOob).
  virtual bool is_mpi() const { return false; }
  // Posts an allgather of `len` bytes per rank.  `channel` (0..65535) keeps exchanges that
  // could be in flight at once apart; one channel carries one exchange at a time.
  virtual Status allgather(const void *data, size_t len, int channel,
                           std::unique_ptr<OobRequest> *request) = 0;
  // Best effort: sends `len` bytes to every other rank on `channel` without waiting, so
  // peers still in an exchange learn at once that this rank gave up.  No-op if unsupported.
  virtual void notify_all(const void * /*data*/, size_t /*len*/, int /*channel*/) {}
  // Takes one notice of at most `len` bytes from `channel` if one arrived; *from = its rank.
  virtual bool poll_notice(void * /*data*/, size_t /*len*/, int /*channel*/, int * /*from*/) {
    return false;
  }
};

}  // namespace cohort
