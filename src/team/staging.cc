#include "team/staging.h"

#include <atomic>
#include <cstring>

#include "core/clock.h"
#include "core/cuda_stream.h"
#include "core/log.h"

namespace cohort {
namespace {

// One piece's gate: open once the stream wrote its number into ready; at its end the number
// goes into done (never lowering it: pieces end in order, a failure ends the later ones too).
class PieceGate final : public RequestGate {
 public:
  PieceGate(uint32_t *ready, uint32_t *done, uint32_t piece, std::atomic<int> *outstanding)
      : ready_(ready), done_(done), piece_(piece), outstanding_(outstanding) {}
  bool open() const override {
    return reached(std::atomic_ref<uint32_t>(*ready_).load(std::memory_order_acquire), piece_);
  }
  void end(Status) override {
    // Counted first: a stream that saw done may start the next replay at once.
    if (outstanding_ != nullptr) outstanding_->fetch_sub(1, std::memory_order_release);
    advance_done(done_, piece_);
  }

 private:
  uint32_t *ready_;
  uint32_t *done_;
  uint32_t piece_;
  std::atomic<int> *outstanding_;
};

}  // namespace

bool CopyGate::open() const {
  if (!armed_.load(std::memory_order_acquire)) return false;
  cuda::ContextScope scope(context_);
  return cuda::event_query(event_, "a piece's copy into host memory") != COHORT_IN_PROGRESS;
}

Status Staging::create(std::unique_ptr<Staging> *out) {
  std::unique_ptr<Staging> staging(new Staging);
  staging->context_ = cuda::current_context();
  if (staging->context_ == nullptr) {
    return fail(COHORT_ERR_CUDA, "the calling thread has no current CUDA context");
  }
  static_assert(3 * kWordStride * sizeof(uint32_t) <= kLinesAt &&
                kLinesAt % alignof(kernels::LlLine) == 0);
  const size_t bytes = kLinesAt + 2 * kernels::kLlMaxLines * sizeof(kernels::LlLine);
  void *words = nullptr;
  Status s = cuda::mapped_alloc(bytes, &words,
                                "allocating the staging words and lines (page-locked, mapped)");
  if (is_error(s)) return s;
  std::memset(words, 0, bytes);
  staging->words_ = static_cast<uint32_t *>(words);
  staging->lines_ = reinterpret_cast<kernels::LlLine *>(static_cast<char *>(words) + kLinesAt);
  s = cuda::event_create(&staging->end_, "creating the staging event");
  if (is_error(s)) return s;
  *out = std::move(staging);
  return COHORT_SUCCESS;
}

Staging::~Staging() {
  cuda::ContextScope scope(context_);
  drain(10);
  for (void *event : copy_events_) cuda::event_destroy(event);
  cuda::event_destroy(end_);
  cuda::event_destroy(join_);
  cuda::stream_destroy(own_stream_);
}

Status Staging::reserve(size_t bytes) {
  free_retired(false);
  if (bytes <= capacity_) return COHORT_SUCCESS;
  const size_t grown = std::max(bytes, 2 * capacity_);
  void *memory = nullptr;
  Status s = cuda::mapped_alloc(grown, &memory, "allocating staging memory (page-locked)");
  if (is_error(s)) return fail(s, strprintf("%s, %zu bytes", last_error().c_str(), grown));
  if (memory_ != nullptr) {
    Retired old{memory_, nullptr};
    s = cuda::event_create(&old.event, "creating a staging event");
    if (!is_error(s) && used_) s = cuda::event_record(old.event, last_stream_, "retiring staging");
    retired_.push_back(old);  // kept (and leaked at worst) even when the event failed
  }
  memory_ = static_cast<char *>(memory);
  capacity_ = grown;
  return s;
}

void advance_done(uint32_t *done, uint32_t piece) {
  std::atomic_ref<uint32_t> word(*done);
  uint32_t seen = word.load(std::memory_order_relaxed);
  while (!reached(seen, piece) &&
         !word.compare_exchange_weak(seen, piece, std::memory_order_release)) {
  }
}

uint32_t claim_pieces(uint32_t *next, size_t pieces) {
  uint32_t first = *next;
  if (static_cast<uint32_t>(first + pieces) < first) first = 0;  // first + 1 ... would pass 0
  *next = first + static_cast<uint32_t>(pieces);
  return first;
}

std::shared_ptr<RequestGate> Staging::gate(uint32_t piece) {
  return piece_gate(ready_word(), done_word(), piece, nullptr);
}

std::shared_ptr<RequestGate> piece_gate(uint32_t *ready, uint32_t *done, uint32_t piece,
                                        std::atomic<int> *outstanding) {
  return std::make_shared<PieceGate>(ready, done, piece, outstanding);
}

Status Staging::order(void *stream) {
  if (!used_ || stream == last_stream_) return COHORT_SUCCESS;
  return cuda::stream_wait_event(stream, end_,
                                 "ordering the collective after the team's last one (another "
                                 "stream)");
}

Status Staging::finished(void *stream) {
  Status s = cuda::event_record(end_, stream, "recording the collective's end");
  if (is_error(s)) return s;
  used_ = true;
  last_stream_ = stream;
  return COHORT_SUCCESS;
}

Status Staging::join(void *first, const std::vector<void *> &others) {
  Status s = COHORT_SUCCESS;
  if (join_ == nullptr && !others.empty()) s = cuda::event_create(&join_, "creating a join event");
  for (size_t i = 0; i < others.size() && !is_error(s); ++i) {
    s = cuda::event_record(join_, others[i], "recording a group's stream");
    if (!is_error(s)) s = cuda::stream_wait_event(first, join_, "joining a group's streams");
  }
  return s;
}

Status Staging::rejoin(void *first, const std::vector<void *> &others) {
  if (others.empty()) return COHORT_SUCCESS;
  Status s = cuda::event_record(join_, first, "recording a group's end");
  for (size_t i = 0; i < others.size() && !is_error(s); ++i) {
    s = cuda::stream_wait_event(others[i], join_, "ordering a stream after its group");
  }
  return s;
}

Status Staging::own_stream(void **stream) {
  if (own_stream_ == nullptr) {
    Status s = cuda::stream_create(&own_stream_, "creating the team's staging stream");
    if (is_error(s)) return s;
  }
  *stream = own_stream_;
  return COHORT_SUCCESS;
}

Status Staging::copy_event(size_t slot, void **event) {
  if (copy_events_.size() <= slot) copy_events_.resize(slot + 1, nullptr);
  if (copy_events_[slot] == nullptr) {
    Status s = cuda::event_create(&copy_events_[slot], "creating a staging event");
    if (is_error(s)) return s;
  }
  *event = copy_events_[slot];
  return COHORT_SUCCESS;
}

void Staging::free_retired(bool all) {
  for (size_t i = 0; i < retired_.size();) {
    Retired &r = retired_[i];
    const bool idle =
        r.event == nullptr || cuda::event_query(r.event, "staging") != COHORT_IN_PROGRESS;
    if (!idle && !all) {
      ++i;
      continue;
    }
    if (idle) cuda::mapped_free(r.memory);
    cuda::event_destroy(r.event);
    retired_.erase(retired_.begin() + static_cast<long>(i));
  }
}

void Staging::drain(double timeout_s) {
  const int64_t deadline = deadline_after(timeout_s);
  Backoff backoff;
  bool idle = !used_;
  while (!idle) {
    idle = cuda::event_query(end_, "staging") != COHORT_IN_PROGRESS;
    if (idle || now_ns() > deadline) break;
    backoff.pause();
  }
  if (!idle) {
    COHORT_LOG_WARN(COLL,
                    "a stream still had staged collective work of a team going away after %.0f s: "
                    "its %zu bytes of page-locked staging memory stay allocated",
                    timeout_s, capacity_);
    return;
  }
  free_retired(true);
  cuda::mapped_free(memory_);
  memory_ = nullptr;
  capacity_ = 0;
  // The words may be read by a stream only while a call is in flight: none is now.
  cuda::mapped_free(words_);
  words_ = nullptr;
}

}  // namespace cohort
