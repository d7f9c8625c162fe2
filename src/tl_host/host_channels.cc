#include "tl_host/host_channels.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "tl_host/mailbox.h"

namespace cohort::tl_host {
namespace {

std::atomic<uint64_t> g_sequence{0};  // segments this process created: part of their names

// At the start of the segment, before the mailboxes.  The segment is created zeroed: empty.
struct NoticeSlot {
  std::atomic<uint32_t> state;  // kEmpty, kWriting, kPublished
  uint32_t reserved;
  tl::Notice notice;
};
constexpr uint32_t kEmpty = 0, kWriting = 1, kPublished = 2;
// The slot's room, a multiple of Mailbox::kAlign so that the mailboxes stay aligned.
constexpr size_t kSlotBytes = 1024;
static_assert(sizeof(NoticeSlot) <= kSlotBytes && kSlotBytes % Mailbox::kAlign == 0);
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared between processes");

size_t segment_bytes(size_t capacity, int local_size) {
  return kSlotBytes + Mailbox::bytes_for(capacity) * local_size * local_size;
}

}  // namespace

HostChannels::HostChannels(std::unique_ptr<ShmSegment> segment, int local_size, size_t capacity)
    : segment_(std::move(segment)),
      local_size_(local_size),
      capacity_(capacity),
      stride_(Mailbox::bytes_for(capacity)) {}

void *HostChannels::mailbox(int from, int to) const {
  return static_cast<char *>(segment_->data()) + kSlotBytes + stride_ * (from * local_size_ + to);
}

void HostChannels::post_notice(const tl::Notice &notice) {
  auto *slot = static_cast<NoticeSlot *>(segment_->data());
  uint32_t expected = kEmpty;
  if (!slot->state.compare_exchange_strong(expected, kWriting, std::memory_order_acquire)) return;
  slot->notice = notice;
  slot->state.store(kPublished, std::memory_order_release);
}

bool HostChannels::read_notice(tl::Notice *out) const {
  const auto *slot = static_cast<const NoticeSlot *>(segment_->data());
  if (slot->state.load(std::memory_order_acquire) != kPublished) return false;
  *out = slot->notice;
  return true;
}

Status HostChannels::create(uint64_t host_id, int local_size, size_t capacity, SegmentInfo *info,
                            std::unique_ptr<HostChannels> *out) {
  Status s = Mailbox::check_capacity(capacity);
  if (is_error(s)) return s;
  remove_stale_segments(host_id);
  const std::string name = segment_name(host_id, getpid(), g_sequence++);
  std::unique_ptr<ShmSegment> segment;
  s = ShmSegment::create(name, segment_bytes(capacity, local_size), &segment);
  if (is_error(s)) return s;
  std::unique_ptr<HostChannels> channels(
      new HostChannels(std::move(segment), local_size, capacity));
  for (int from = 0; from < local_size; ++from) {
    for (int to = 0; to < local_size; ++to) {
      if (s = Mailbox::init(channels->mailbox(from, to), capacity); is_error(s)) return s;
    }
  }
  std::memset(info, 0, sizeof(*info));
  std::strncpy(info->name, name.c_str(), sizeof(info->name) - 1);
  info->capacity = capacity;
  info->local_size = local_size;
  *out = std::move(channels);
  return COHORT_SUCCESS;
}

Status HostChannels::attach(const SegmentInfo &info, std::unique_ptr<HostChannels> *out) {
  std::string name(info.name, strnlen(info.name, sizeof(info.name)));
  Status s = Mailbox::check_capacity(info.capacity);
  if (is_error(s)) return s;
  std::unique_ptr<ShmSegment> segment;
  s = ShmSegment::attach(name, segment_bytes(info.capacity, info.local_size), &segment);
  if (is_error(s)) return s;
  std::unique_ptr<HostChannels> channels(
      new HostChannels(std::move(segment), info.local_size, info.capacity));
  for (int from = 0; from < info.local_size; ++from) {
    for (int to = 0; to < info.local_size; ++to) {
      s = Mailbox::validate(channels->mailbox(from, to), info.capacity);
      if (is_error(s)) return failf(s, "segment %s: %s", name.c_str(), last_error().c_str());
    }
  }
  *out = std::move(channels);
  return COHORT_SUCCESS;
}

std::vector<coll::PeerChannels> HostChannels::bind(int local_rank,
                                             const std::vector<int> &team_rank_of_local,
                                             int team_size) {
  std::vector<coll::PeerChannels> peers(team_size);
  writers_.clear();
  readers_.clear();
  others_.clear();
  for (int other = 0; other < local_size_; ++other) {
    if (other == local_rank) continue;
    others_.push_back(other);
    writers_.push_back(std::make_unique<MailboxWriter>(mailbox(local_rank, other)));
    readers_.push_back(std::make_unique<MailboxReader>(mailbox(other, local_rank)));
    coll::PeerChannels &p = peers[team_rank_of_local[other]];
    p.to = writers_.back().get();
    p.from = readers_.back().get();
  }
  return peers;
}

void HostChannels::enable_references(size_t min_bytes, const std::vector<int> &pid_of_local) {
  for (size_t k = 0; k < others_.size(); ++k) {
    writers_[k]->enable_references(min_bytes);
    readers_[k]->enable_references(min_bytes, pid_of_local[others_[k]]);
  }
}

}  // namespace cohort::tl_host
