// A single-producer single-consumer byte ring placed in shared memory: the channel between two
// ranks of one host.  The writer copies (or reduces) straight into the ring and the reader
// straight out of it; no locks and no system calls, so a waiting side polls with a Backoff.
//
// Layout at `memory` (64-byte aligned; bytes_for() is a multiple of 64, so mailboxes placed
// back to back in a segment stay aligned):
//   line 0: magic, capacity      written once by init(), checked when opening
//   line 1: tail                 bytes ever committed; written by the writer only
//   line 2: head                 bytes ever consumed; written by the reader only
//   line 3: acks                 references read (single copy); written by the reader only
//   data:   capacity bytes, a power of two, indexed by counter & (capacity - 1)
// The counters only grow (2^64 bytes never wrap in practice), so tail - head is the fill
// level without a full/empty ambiguity.  Each sits in its own cache line so that the two
// sides' stores do not contend.  A release store of a counter publishes the bytes before it;
// the other side's acquire load sees them.
//
// Corruption (a stray write over the header) is caught by validate(), which the connect
// phase runs after attaching, and by asserts in the reader and writer (debug builds).  A
// counter overwritten later cannot make either end touch memory outside the ring: every lent
// region is clipped at the wrap point; it only yields wrong bytes (or an assert).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "coll/channel.h"

namespace cohort::tl_host {

class Mailbox {
 public:
  static constexpr size_t kMinCapacity = 64;
  static constexpr size_t kAlign = 64;  // of `memory`: the header's cache lines

  // A capacity is a power of two >= kMinCapacity (hence a multiple of kChannelAlign).
  static Status check_capacity(size_t capacity);

  // Bytes a mailbox of `capacity` occupies: header + data; 0 when check_capacity() fails.
  static size_t bytes_for(size_t capacity);

  // Lays out an empty mailbox at `memory` (bytes_for(capacity) bytes, kAlign-aligned).  The
  // creator calls it once, before any reader or writer opens the mailbox.
  static Status init(void *memory, size_t capacity);

  // Checks that `memory` holds an initialised mailbox of `capacity` whose counters are sane.
  static Status validate(const void *memory, size_t capacity);
};

// The shared header (mailbox.cc): the ends below point into it.
struct MailboxHeader;

// What the two ends share.  Each owns one counter of the header (the writer the tail, the
// reader the head), loads the other's, and lends the ring's bytes up to the wrap point.
class MailboxEnd {
 public:
  MailboxEnd(void *memory, bool writer);
  // The ready bytes from our counter up to the wrap point (free space to the writer, unread
  // bytes to the reader): where they start, and their count in *bytes.
  char *lend(size_t *bytes);
  size_t lent() const { return lent_; }
  // Moves our counter past `bytes` of the last lend and publishes it (a release store).
  void advance(size_t bytes);
  std::atomic<uint64_t> &acks() const;  // references read (single copy)

 private:
  std::atomic<uint64_t> &own() const;
  std::atomic<uint64_t> &other() const;
  uint64_t fill() const;   // tail - head, as far as this end knows
  uint64_t ready() const;  // what lend() may give

  MailboxHeader *header_;
  char *data_;
  bool writer_;
  uint64_t mask_;
  uint64_t own_;         // our own counter: only we write it
  uint64_t other_seen_;  // the other end's counter when last loaded
  size_t lent_ = 0;      // by the last lend(), for the commit() / consume() check
};

// The producing end.  One per mailbox, in one thread at a time.  `memory` holds a mailbox that
// init() laid out (a process that attached runs validate() first; the constructors only assert).
class MailboxWriter final : public coll::SendChannel {
 public:
  explicit MailboxWriter(void *memory) : end_(memory, /*writer=*/true) {}
  void *reserve(size_t *bytes) override { return end_.lend(bytes); }
  void commit(size_t bytes) override;
  size_t reference_min() const override { return reference_min_; }
  uint64_t acks() const override;
  uint64_t note_reference() override { return ++references_; }
  void enable_references(size_t min_bytes) { reference_min_ = min_bytes; }

 private:
  MailboxEnd end_;
  size_t reference_min_ = 0;
  uint64_t references_ = 0;  // references sent: the reader acknowledges each, in order
};

// The consuming end.  One per mailbox, in one thread at a time; `memory` as for the writer.
class MailboxReader final : public coll::RecvChannel {
 public:
  explicit MailboxReader(void *memory) : end_(memory, /*writer=*/false) {}
  const void *peek(size_t *bytes) override { return end_.lend(bytes); }
  void consume(size_t bytes) override;
  size_t reference_min() const override { return reference_min_; }
  Status read_remote(const void *remote, void *local, size_t bytes) override;
  void ack() override;
  // References are read from process `writer_pid` (cross-memory attach).
  void enable_references(size_t min_bytes, int writer_pid) {
    reference_min_ = min_bytes;
    writer_pid_ = writer_pid;
  }

 private:
  MailboxEnd end_;
  size_t reference_min_ = 0;
  int writer_pid_ = 0;
};

// Copies `bytes` at `remote` in process `pid` to `local` (process_vm_readv, in pieces the
// kernel may cut short); a named COHORT_ERR_SYSTEM when the kernel refuses.
Status read_process_memory(int pid, const void *remote, void *local, size_t bytes);

}  // namespace cohort::tl_host
