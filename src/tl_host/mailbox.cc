#include "tl_host/mailbox.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cinttypes>
#include <new>

#include <sys/uio.h>
#include <cerrno>
#include <cstring>

namespace cohort::tl_host {

// "COHORTM2": the layout's version is its last byte, so a mailbox laid out by an
// incompatible build fails validate() instead of being misread.
constexpr uint64_t kMailboxMagic = 0x434f484f52544d32;

struct MailboxHeader {
  alignas(Mailbox::kAlign) uint64_t magic;
  uint64_t capacity;
  alignas(Mailbox::kAlign) std::atomic<uint64_t> tail;
  alignas(Mailbox::kAlign) std::atomic<uint64_t> head;
  alignas(Mailbox::kAlign) std::atomic<uint64_t> acks;
};

// Only lock-free atomics are address-free, i.e. work when two processes map them at
// different addresses.
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free");
static_assert(sizeof(MailboxHeader) == 4 * Mailbox::kAlign, "one cache line per field group");

namespace {

const MailboxHeader *header_at(const void *memory) {
  return static_cast<const MailboxHeader *>(memory);
}

bool is_aligned(const void *memory) {
  return reinterpret_cast<uintptr_t>(memory) % Mailbox::kAlign == 0;
}

}  // namespace

Status Mailbox::check_capacity(size_t capacity) {
  if (capacity < kMinCapacity || !std::has_single_bit(capacity)) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "mailbox capacity %zu bytes: expected a power of two of at least %zu bytes",
                 capacity, kMinCapacity);
  }
  return COHORT_SUCCESS;
}

size_t Mailbox::bytes_for(size_t capacity) {
  if (is_error(check_capacity(capacity))) return 0;
  return sizeof(MailboxHeader) + capacity;
}

Status Mailbox::init(void *memory, size_t capacity) {
  if (Status s = check_capacity(capacity); is_error(s)) return s;
  if (!is_aligned(memory)) {
    return failf(COHORT_ERR_INVALID_ARG, "mailbox at %p: not aligned to %zu bytes", memory, kAlign);
  }
  auto *header = new (memory) MailboxHeader;
  header->magic = kMailboxMagic;
  header->capacity = capacity;
  header->tail.store(0, std::memory_order_relaxed);
  header->head.store(0, std::memory_order_relaxed);
  header->acks.store(0, std::memory_order_relaxed);
  return COHORT_SUCCESS;
}

Status Mailbox::validate(const void *memory, size_t capacity) {
  if (!is_aligned(memory)) {
    return failf(COHORT_ERR_INTERNAL, "mailbox at %p: not aligned to %zu bytes", memory, kAlign);
  }
  const MailboxHeader *header = header_at(memory);
  if (header->magic != kMailboxMagic) {
    return failf(COHORT_ERR_INTERNAL,
                 "mailbox at %p: magic 0x%016" PRIx64 ", expected 0x%016" PRIx64
                 ": not initialised, overwritten, or laid out by another Cohort version",
                 memory, header->magic, kMailboxMagic);
  }
  if (header->capacity != capacity) {
    return failf(COHORT_ERR_INTERNAL, "mailbox at %p: capacity %" PRIu64 ", expected %zu", memory,
                 header->capacity, capacity);
  }
  uint64_t head = header->head.load(std::memory_order_acquire);
  uint64_t tail = header->tail.load(std::memory_order_acquire);
  if (tail - head > capacity) {
    return failf(COHORT_ERR_INTERNAL,
                 "mailbox at %p: %" PRIu64 " bytes in flight (tail %" PRIu64 ", head %" PRIu64
                 ") exceed its capacity %zu: counters overwritten",
                 memory, tail - head, tail, head, capacity);
  }
  return COHORT_SUCCESS;
}

MailboxEnd::MailboxEnd(void *memory, bool writer)
    : header_(static_cast<MailboxHeader *>(memory)),
      data_(static_cast<char *>(memory) + sizeof(MailboxHeader)),
      writer_(writer),
      mask_(header_->capacity - 1),
      own_(own().load(std::memory_order_relaxed)),
      other_seen_(other().load(std::memory_order_acquire)) {
  assert(header_->magic == kMailboxMagic && "mailbox not initialised or overwritten");
  assert(std::has_single_bit(mask_ + 1) && "mailbox capacity overwritten");
}

std::atomic<uint64_t> &MailboxEnd::own() const { return writer_ ? header_->tail : header_->head; }
std::atomic<uint64_t> &MailboxEnd::other() const { return writer_ ? header_->head : header_->tail; }
std::atomic<uint64_t> &MailboxEnd::acks() const { return header_->acks; }

uint64_t MailboxEnd::fill() const { return writer_ ? own_ - other_seen_ : other_seen_ - own_; }
uint64_t MailboxEnd::ready() const { return writer_ ? mask_ + 1 - fill() : fill(); }

char *MailboxEnd::lend(size_t *bytes) {
  uint64_t capacity = mask_ + 1;
  uint64_t offset = own_ & mask_;
  uint64_t to_wrap = capacity - offset;
  // Reload the other end's counter only when the value last seen cannot lend the whole run to
  // the wrap point: a ring far from full (writer) or from empty (reader) then costs no
  // cache-line transfer per call.
  if (ready() < to_wrap) {
    other_seen_ = other().load(std::memory_order_acquire);
    assert(fill() <= capacity && "mailbox counter of the other end overwritten");
  }
  lent_ = std::min(ready(), to_wrap);
  *bytes = lent_;
  return data_ + offset;
}

void MailboxEnd::advance(size_t bytes) {
  if (bytes == 0) return;
  lent_ -= bytes;
  own_ += bytes;
  own().store(own_, std::memory_order_release);
}

void MailboxWriter::commit(size_t bytes) {
  assert(bytes <= end_.lent() && "commit() of more than reserve() lent");
  assert(bytes % coll::kChannelAlign == 0 && "commit() of a partial element");
  // Release: the bytes written into the ring are visible to whoever sees the new tail.
  end_.advance(bytes);
}

void MailboxReader::consume(size_t bytes) {
  assert(bytes <= end_.lent() && "consume() of more than peek() lent");
  assert(bytes % coll::kChannelAlign == 0 && "consume() of a partial element");
  // Release: our reads of these bytes finish before the writer may overwrite them.
  end_.advance(bytes);
}

}  // namespace cohort::tl_host

namespace cohort::tl_host {

uint64_t MailboxWriter::acks() const { return end_.acks().load(std::memory_order_acquire); }

Status MailboxReader::read_remote(const void *remote, void *local, size_t bytes) {
  return read_process_memory(writer_pid_, remote, local, bytes);
}

void MailboxReader::ack() {
  // Release: every read of the referenced bytes happened before the writer may reuse them.
  std::atomic<uint64_t> &acks = end_.acks();
  acks.store(acks.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

Status read_process_memory(int pid, const void *remote, void *local, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    iovec to{static_cast<char *>(local) + done, bytes - done};
    iovec from{const_cast<char *>(static_cast<const char *>(remote)) + done, bytes - done};
    ssize_t n = process_vm_readv(pid, &to, 1, &from, 1, 0);
    if (n <= 0) {
      return failf(COHORT_ERR_SYSTEM,
                   "single-copy read of %zu bytes from process %d failed: %s (cross-memory "
                   "attach needs the same user and ptrace permission; set "
                   "COHORT_SHM_SINGLE_COPY_BYTES=0 to copy through shared memory)",
                   bytes - done, pid, n == 0 ? "nothing read" : strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return COHORT_SUCCESS;
}

}  // namespace cohort::tl_host
