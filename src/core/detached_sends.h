// Sends whose requester no longer waits for them.  An exchange is complete once every rank's
// block arrived; its own sends may still be in flight (a peer has not progressed yet), so
// they are handed here with their buffer, tested on later polls, and freed once complete.
// Nothing waits on them, so a peer that never progresses costs a buffer, never a hang.
#pragma once

#include <mpi.h>

#include <memory>

namespace cohort {

using SendBuffer = std::shared_ptr<const char[]>;

// Posts MPI_Isend of `len` bytes of `buffer` and detaches it at once (fire and forget).
int send_detached(const SendBuffer &buffer, size_t len, int peer, int tag, MPI_Comm comm);

// Takes over a pending send request; `buffer` stays alive until the send completes.
void detach_send(MPI_Request request, SendBuffer buffer);

// Frees detached sends that completed.  Cheap; called from every exchange poll.
void reap_detached_sends();

}  // namespace cohort
