// A one-way byte stream between two ranks, as a transport provides it to an execution (see
// execution.h): the sender writes into space the channel lends it, the receiver reads (or
// reduces) straight out of what has arrived.  Shared-memory mailboxes implement it within a
// host (tl_host), UCX tag messages between hosts (tl_ucx).
//
// Contract: one writer and one reader per channel; bytes arrive in order; the executor pads
// every message to a multiple of kChannelAlign bytes, so every message starts aligned and no
// element (at most 8 bytes) is ever split by the end of a lent region.  A channel that broke
// (its peer unreachable, a transfer failed) says so through failure(): an execution asks when
// a transfer cannot move, so a broken peer ends the collective with the transport's reason at
// once instead of a timeout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace cohort::coll {

constexpr size_t kChannelAlign = 8;

class SendChannel {
 public:
  virtual ~SendChannel() = default;
  // Contiguous space to write now: sets *bytes (0 when full: try again later).
  virtual void *reserve(size_t *bytes) = 0;
  // Publishes `bytes` of the reserved space (a multiple of kChannelAlign).
  virtual void commit(size_t bytes) = 0;

  // Single copy (ranks of one host): a message of at least reference_min() bytes (0: never)
  // goes as a reference to the sender's memory, which the receiver reads directly; the sender
  // keeps its bytes unchanged until acks() reaches the count of references sent (in order).
  virtual size_t reference_min() const { return 0; }
  virtual uint64_t acks() const { return 0; }
  // Counts a reference just sent; returns the acks() value at which it has been read.
  virtual uint64_t note_reference() { return 0; }

  // COHORT_SUCCESS while the channel works; once broken, its failure (the detail names the
  // transport, the peer and the reason).
  virtual Status failure() const { return COHORT_SUCCESS; }
};

class RecvChannel {
 public:
  virtual ~RecvChannel() = default;
  // Contiguous bytes that have arrived: sets *bytes (0 when none yet).
  virtual const void *peek(size_t *bytes) = 0;
  // Frees `bytes` read from the front (a multiple of kChannelAlign).
  virtual void consume(size_t bytes) = 0;

  // The receiving end of single copy: the same reference_min() as the sender's end; copies
  // `bytes` from `remote` (the sender's address) to `local`; ack() says one reference is read.
  virtual size_t reference_min() const { return 0; }
  virtual Status read_remote(const void *remote, void *local, size_t bytes) {
    (void)remote, (void)local, (void)bytes;
    return fail(COHORT_ERR_INTERNAL, "this channel reads no references");
  }
  virtual void ack() {}

  // As SendChannel::failure().
  virtual Status failure() const { return COHORT_SUCCESS; }
};

// What a reference message carries (its wire size is a multiple of kChannelAlign).
struct Reference {
  uint64_t address;
  uint64_t bytes;
};

}  // namespace cohort::coll
