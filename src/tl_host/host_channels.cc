#include "tl_host/host_channels.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "tl_host/mailbox.h"

namespace cohort::tl_host {
namespace {

std::atomic<uint64_t> g_sequence{0};  // segments this process created: part of their names

}  // namespace

HostChannels::HostChannels(std::unique_ptr<ShmSegment> segment, int local_size, size_t capacity)
    : segment_(std::move(segment)),
      local_size_(local_size),
      capacity_(capacity),
      stride_(Mailbox::bytes_for(capacity)) {}

void *HostChannels::mailbox(int from, int to) const {
  return static_cast<char *>(segment_->data()) + stride_ * (from * local_size_ + to);
}

Status HostChannels::create(uint64_t host_id, int local_size, size_t capacity, SegmentInfo *info,
                            std::unique_ptr<HostChannels> *out) {
  Status s = Mailbox::check_capacity(capacity);
  if (is_error(s)) return s;
  remove_stale_segments(host_id);
  const std::string name = segment_name(host_id, getpid(), g_sequence++);
  const size_t bytes = Mailbox::bytes_for(capacity) * local_size * local_size;
  std::unique_ptr<ShmSegment> segment;
  if (s = ShmSegment::create(name, bytes, &segment); is_error(s)) return s;
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
  const size_t bytes = Mailbox::bytes_for(info.capacity) * info.local_size * info.local_size;
  std::unique_ptr<ShmSegment> segment;
  if (s = ShmSegment::attach(name, bytes, &segment); is_error(s)) return s;
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

std::vector<PeerChannels> HostChannels::bind(int local_rank,
                                             const std::vector<int> &team_rank_of_local,
                                             int team_size) {
  std::vector<PeerChannels> peers(team_size);
  writers_.clear();
  readers_.clear();
  others_.clear();
  for (int other = 0; other < local_size_; ++other) {
    if (other == local_rank) continue;
    others_.push_back(other);
    writers_.push_back(std::make_unique<MailboxWriter>(mailbox(local_rank, other)));
    readers_.push_back(std::make_unique<MailboxReader>(mailbox(other, local_rank)));
    PeerChannels &p = peers[team_rank_of_local[other]];
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
