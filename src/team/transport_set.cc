#include "team/transport_set.h"

#include <stdexcept>

#include "team/transport_table.h"

namespace cohort {

void TransportSet::create(tl::TeamView view) {
  view_ = std::move(view);
  transports_.clear();
  offsets_.clear();
  size_t offset = 0;
  for (const TransportInfo &info : transport_table()) {
    transports_.push_back(info.make());
    offsets_.push_back(offset);
    offset += transports_.back()->record_bytes(view_);
  }
  record_bytes_ = offset;
}

Status TransportSet::post(char *record) {
  for (size_t t = 0; t < transports_.size(); ++t) {
    Status s = transports_[t]->post(view_, record + offsets_[t]);
    if (is_error(s))
      return failf(s, "transport %s: %s", transports_[t]->name(), last_error().c_str());
  }
  return COHORT_SUCCESS;
}

Status TransportSet::connect(const char *records, size_t stride, size_t offset) {
  for (size_t t = 0; t < transports_.size(); ++t) {
    Status s =
        transports_[t]->connect(view_, tl::RecordTable{records, stride, offset + offsets_[t]});
    if (is_error(s))
      return failf(s, "transport %s: %s", transports_[t]->name(), last_error().c_str());
  }
  peers_.assign(view_.size, coll::PeerChannels{});
  via_.assign(view_.size, -1);
  for (int r = 0; r < view_.size; ++r) {
    for (size_t t = 0; t < transports_.size() && r != view_.rank && via_[r] < 0; ++t) {
      if (transports_[t]->reaches(r)) via_[r] = static_cast<signed char>(t);
    }
    if (r != view_.rank && via_[r] < 0) {
      return failf(COHORT_ERR_NOT_SUPPORTED, "no transport reaches %s from rank %d",
                   view_.describe(r).c_str(), view_.rank);
    }
  }
  return COHORT_SUCCESS;
}

coll::PeerChannels TransportSet::channels(int peer) {
  if (peer < 0 || peer >= static_cast<int>(peers_.size()) || via_[peer] < 0) return {};
  coll::PeerChannels &p = peers_[peer];
  if (!p.to || !p.from) p = transports_[via_[peer]]->channels(peer);
  return p;
}

std::string TransportSet::connected() const {
  std::string text;
  for (const auto &t : transports_) {
    text += (text.empty() ? "" : ", ") + std::string(t->name()) + " " +
            std::to_string(t->peers_connected());
  }
  return text;
}

std::string TransportSet::settings() const {
  std::string text;
  for (const auto &t : transports_) {
    std::string mine = t->settings();
    if (!mine.empty()) text += (text.empty() ? "" : " ") + mine;
  }
  return text;
}

std::vector<uint64_t> TransportSet::ready_words() const {
  std::vector<uint64_t> words;
  for (const auto &t : transports_) words.push_back(t->ready_word());
  return words;
}

void TransportSet::ready(const std::vector<std::vector<uint64_t>> &words) {
  std::vector<uint64_t> column(words.size());
  for (size_t t = 0; t < transports_.size(); ++t) {
    for (size_t r = 0; r < words.size(); ++r) column[r] = words[r][t];
    transports_[t]->ready(view_, column);
  }
}

TransportSet::Lock::Lock(const TransportSet &set) {
  size_t held = 0;
  for (const auto &t : set.transports_) {
    std::mutex *m = t->serial();
    if (m == nullptr) continue;
    if (held == kMaxLocks) throw std::logic_error("more transports lock than TransportSet holds");
    locks_[held++] = std::unique_lock<std::mutex>(*m);
  }
}

void TransportSet::progress() {
  for (const auto &t : transports_) t->progress();
}

std::vector<int> TransportSet::busy_sends() const {
  std::vector<int> ranks;
  for (const auto &t : transports_) t->busy_sends(&ranks);
  return ranks;
}

void TransportSet::announce(const tl::Notice &notice) {
  for (const auto &t : transports_) t->announce(notice);
}

bool TransportSet::poll_notice(tl::Notice *out) {
  for (const auto &t : transports_) {
    if (t->poll_notice(out)) return true;
  }
  return false;
}

void TransportSet::release() {
  peers_.clear();
  via_.clear();
  transports_.clear();  // each takes its own lock as it closes
  offsets_.clear();
  record_bytes_ = 0;
}

}  // namespace cohort
