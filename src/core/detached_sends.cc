#include "core/detached_sends.h"

#include <mutex>
#include <utility>
#include <vector>

#include "core/oob_mpi.h"

namespace cohort {
namespace {

struct Detached {
  std::mutex mutex;
  std::vector<std::pair<MPI_Request, SendBuffer>> sends;
};

Detached &detached() {
  static Detached *d = new Detached();  // lives through exit: sends may outlive everything
  return *d;
}

}  // namespace

int send_detached(const SendBuffer &buffer, size_t len, int peer, int tag, MPI_Comm comm) {
  MPI_Request request;
  int rc = MPI_Isend(buffer.get(), static_cast<int>(len), MPI_BYTE, peer, tag, comm, &request);
  if (rc == MPI_SUCCESS) detach_send(request, buffer);
  return rc;
}

void detach_send(MPI_Request request, SendBuffer buffer) {
  if (request == MPI_REQUEST_NULL) return;
  Detached &d = detached();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.sends.emplace_back(request, std::move(buffer));
}

void reap_detached_sends() {
  if (!mpi_usable()) return;
  Detached &d = detached();
  std::lock_guard<std::mutex> lock(d.mutex);
  size_t kept = 0;
  for (auto &entry : d.sends) {
    int done = 0;
    MPI_Test(&entry.first, &done, MPI_STATUS_IGNORE);
    if (!done) d.sends[kept++] = std::move(entry);
  }
  d.sends.resize(kept);
}

}  // namespace cohort
