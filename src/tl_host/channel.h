// A one-way byte stream between two ranks, as a transport provides it to the executor: the
// sender writes into space the channel lends it, the receiver reads (or reduces) straight out
// of what has arrived.  Shared-memory mailboxes implement it within a host; UCX will between
// hosts.
//
// Contract: one writer and one reader per channel; bytes arrive in order; the executor pads
// every message to a multiple of kChannelAlign bytes, so every message starts aligned and no
// element (at most 8 bytes) is ever split by the end of a lent region.
#pragma once

#include <cstddef>

namespace cohort::tl_host {

constexpr size_t kChannelAlign = 8;

class SendChannel {
 public:
  virtual ~SendChannel() = default;
  // Contiguous space to write now: sets *bytes (0 when full: try again later).
  virtual void *reserve(size_t *bytes) = 0;
  // Publishes `bytes` of the reserved space (a multiple of kChannelAlign).
  virtual void commit(size_t bytes) = 0;
};

class RecvChannel {
 public:
  virtual ~RecvChannel() = default;
  // Contiguous bytes that have arrived: sets *bytes (0 when none yet).
  virtual const void *peek(size_t *bytes) = 0;
  // Frees `bytes` read from the front (a multiple of kChannelAlign).
  virtual void consume(size_t bytes) = 0;
};

}  // namespace cohort::tl_host
