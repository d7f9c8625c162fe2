#include "team/staged_replay.h"

#include <algorithm>

#include "core/cuda_stream.h"
#include "core/log.h"

namespace cohort {
namespace {

// Replays whose graphs went away, freed by the next call through host memory.
std::mutex g_gone_mutex;
std::vector<StagedReplay *> g_gone;

}  // namespace

Status StagedReplay::create(std::shared_ptr<ReplayHub> hub, const char *what, size_t bytes,
                            std::unique_ptr<StagedReplay> *out) {
  std::unique_ptr<StagedReplay> r(new StagedReplay);
  r->hub_ = std::move(hub);
  r->what_ = what;
  r->context_ = cuda::current_context();
  cuda::RelaxedCapture relaxed;  // the calling thread captures
  bytes = std::max<size_t>(1, bytes);
  void *words = nullptr, *memory = nullptr;
  Status s = cuda::mapped_alloc(3 * kWordStride * sizeof(uint32_t), &words,
                                "allocating a captured collective's words (page-locked, mapped)");
  if (is_error(s)) return s;
  r->words_ = static_cast<uint32_t *>(words);
  r->words_[0] = r->words_[kWordStride] = r->words_[2 * kWordStride] = 0;
  s = cuda::mapped_alloc(bytes, &memory, "allocating a captured collective's staging memory");
  if (is_error(s)) return fail(s, strprintf("%s, %zu bytes", last_error().c_str(), bytes));
  r->memory_ = static_cast<char *>(memory);
  *out = std::move(r);
  return COHORT_SUCCESS;
}

StagedReplay::~StagedReplay() {
  cuda::ContextScope scope(context_);
  cuda::mapped_free(memory_);
  cuda::mapped_free(words_);
}

Status StagedReplay::capture_ring(void *stream) {
  Status s = cuda::write_word(words_, 0, stream, "capturing a replay's start (ready)");
  if (!is_error(s))
    s = cuda::write_word(words_ + kWordStride, 0, stream, "capturing a replay's start (done)");
  if (!is_error(s)) {
    s = cuda::write_word(words_ + 2 * kWordStride, 1, stream, "capturing a replay's doorbell");
  }
  return s;
}

void StagedReplay::on_graph_gone(void *data) {
  auto *r = static_cast<StagedReplay *>(data);
  r->gone_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_gone_mutex);
  g_gone.push_back(r);
}

void StagedReplay::free_gone() {
  std::vector<StagedReplay *> gone;
  {
    std::lock_guard<std::mutex> lock(g_gone_mutex);
    gone.swap(g_gone);
  }
  for (StagedReplay *r : gone) {
    r->hub_->remove(r);  // the engine no longer looks at it
    delete r;
  }
}

bool StagedReplay::rung() {
  std::atomic_ref<uint32_t> bell(words_[2 * kWordStride]);
  if (bell.load(std::memory_order_acquire) == 0) return false;
  bell.store(0, std::memory_order_relaxed);
  return true;
}

void StagedReplay::replay(CollFront *front) {
  if (front == nullptr) return skip("its team is gone");
  if (outstanding_.load(std::memory_order_acquire) > 0) {
    COHORT_LOG_WARN(COLL,
                    "team '%s': a replay of a captured %s through host memory began while "
                    "another replay of the same capture ran (two instances of one CUDA graph "
                    "launched at once): it runs nothing, its output is not a result, and the "
                    "other's may not be either; order the launches",
                    hub_->team.c_str(), what_);
    return;
  }
  if (is_error(front->queue_replay(*this))) skip(last_error().c_str());
}

void StagedReplay::skip(const char *why) {
  COHORT_LOG_WARN(COLL,
                  "team '%s': a replay of a captured %s through host memory runs nothing: %s; "
                  "its output is not a result",
                  hub_->team.c_str(), what_, why);
  std::atomic_ref<uint32_t>(words_[kWordStride])
      .store(static_cast<uint32_t>(pieces()), std::memory_order_release);
}

void StagedReplay::restart() {
  outstanding_.store(static_cast<int>(pieces()), std::memory_order_release);
}

std::shared_ptr<RequestGate> StagedReplay::gate(uint32_t piece) {
  return piece_gate(words_, words_ + kWordStride, piece, &outstanding_);
}

void ReplayHub::add(StagedReplay *replay) {
  std::lock_guard<std::mutex> lock(mutex);
  live.push_back(replay);
  live_count.store(static_cast<int>(live.size()));
}

void ReplayHub::remove(StagedReplay *replay) {
  std::lock_guard<std::mutex> lock(mutex);
  live.erase(std::remove(live.begin(), live.end(), replay), live.end());
  live_count.store(static_cast<int>(live.size()));
}

bool ReplayHub::poll() {
  std::lock_guard<std::mutex> lock(mutex);
  bool rang = false;
  for (size_t i = 0; i < live.size();) {
    StagedReplay *r = live[i];
    if (r->gone_.load(std::memory_order_acquire)) {  // freed later, by free_gone()
      live.erase(live.begin() + static_cast<long>(i));
      continue;
    }
    if (r->rung()) {
      r->replay(front);
      rang = true;
    }
    ++i;
  }
  live_count.store(static_cast<int>(live.size()));
  return rang;
}

}  // namespace cohort
