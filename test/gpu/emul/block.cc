#include "block.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "cuda_emul_prelude.h"

namespace cohort_emul {
namespace {

thread_local BlockRun *running_block = nullptr;

// Rounds of spinning after which an idle block sleeps instead of yielding: a CI machine has
// 2 cores for dozens of blocks, most of them polling flags while a few copy and reduce.
constexpr unsigned kYieldingRounds = 32;
constexpr auto kIdleSleep = std::chrono::microseconds(50);

std::atomic<unsigned> jitter_per_thousand{0};

// A pause now and then (set_jitter), from a generator of this OS thread's own.
void maybe_pause() {
  const unsigned jitter = jitter_per_thousand.load(std::memory_order_relaxed);
  if (jitter == 0) return;
  thread_local uint64_t state = 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(&state);
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  const unsigned draw = static_cast<unsigned>(state >> 33);
  if (draw % 1000 < jitter) std::this_thread::sleep_for(std::chrono::microseconds(draw % 300));
}

}  // namespace

void BlockRun::set_jitter(unsigned per_thousand) {
  jitter_per_thousand.store(per_thousand, std::memory_order_relaxed);
}

BlockRun::BlockRun(unsigned threads, const std::function<void()> &thread_body)
    : body_(thread_body),
      count_(threads),
      stride_(threads % 7 == 0 ? 1 : 7),
      stacks_(StackSet::take(threads)),
      threads_(new Thread[threads]),
      live_(threads) {
  for (unsigned i = 0; i < threads; ++i) {
    Thread &t = threads_[i];
    t.block = this;
    t.index = i;
    t.state = State::kRunnable;
    t.fiber.start(stacks_->stack(i), stacks_->stack_bytes(), &thread_main, &t);
  }
}

BlockRun::~BlockRun() { StackSet::give_back(std::move(stacks_)); }

BlockRun *BlockRun::current() { return running_block; }

void BlockRun::run() {
  BlockRun *const outer = running_block;
  running_block = this;
  while (live_ > 0) {
    bool progressed = false;
    ++round_;
    for (unsigned k = 0; k < count_; ++k) {
      Thread &t = threads_[(static_cast<size_t>(k) + round_) * stride_ % count_];
      if (t.state != State::kRunnable) continue;
      spun_ = false;
      running_ = &t;
      threadIdx = {t.index, 0, 0};
      t.fiber.resume();
      progressed |= !spun_;
    }
    if (progressed) {
      idle_rounds_ = 0;
      maybe_pause();
    } else {
      idle();
    }
  }
  running_ = nullptr;
  running_block = outer;
}

void BlockRun::thread_main(void *arg) {
  Thread *const t = static_cast<Thread *>(arg);
  t->block->body_();
  t->block->end_thread();
}

void BlockRun::end_thread() {
  running_->state = State::kDone;
  --live_;
  if (arrived_ > 0) fail("ended while other threads wait at the barrier", nullptr, 0);
}

bool BlockRun::barrier(bool predicate, const char *file, int line) {
  if (arrived_ == 0) {
    barrier_file_ = file;
    barrier_line_ = line;
    arrived_or_ = false;
  } else if (line != barrier_line_ ||
             (file != barrier_file_ && std::strcmp(file, barrier_file_) != 0)) {
    fail("waits at another barrier than the other threads", file, line);
  }
  arrived_or_ = arrived_or_ || predicate;
  if (++arrived_ < live_) {
    running_->state = State::kWaiting;
    running_->fiber.suspend();  // until the last thread arrives
    return released_or_;
  }
  // The last thread to arrive releases the others and goes on.
  released_or_ = arrived_or_;
  arrived_ = 0;
  for (unsigned i = 0; i < count_; ++i) {
    if (threads_[i].state == State::kWaiting) threads_[i].state = State::kRunnable;
  }
  return released_or_;
}

void BlockRun::spin() {
  spun_ = true;
  running_->fiber.suspend();
}

// Every runnable thread spun: the threads they wait for are in other blocks, on other OS
// threads, which get the core.
void BlockRun::idle() {
  if (++idle_rounds_ < kYieldingRounds) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(kIdleSleep);
  }
}

void BlockRun::fail(const char *what, const char *file, int line) const {
  std::fprintf(stderr, "cohort_emul: block %u of %u, thread %u", blockIdx.x, gridDim.x,
               running_->index);
  if (file) std::fprintf(stderr, " (at %s:%d)", file, line);
  std::fprintf(stderr, " %s", what);
  if (barrier_file_ && arrived_ > 0) {
    std::fprintf(stderr, " (%u of %u threads wait at %s:%d)", arrived_, live_, barrier_file_,
                 barrier_line_);
  }
  std::fprintf(stderr, ": the kernel breaks __syncthreads' contract\n");
  std::abort();
}

}  // namespace cohort_emul
