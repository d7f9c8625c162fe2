// The threads of one thread block as fibers on the calling OS thread (cooperative.h): each
// runs until it waits at a barrier, spins or ends, then the next one runs, round robin in a
// scrambled order that starts elsewhere every round (so that a thread relying on another
// having run first, say thread 0 having filled shared memory, would show).
//
// Besides running them, the block checks the barrier contract CUDA leaves undefined: every
// thread waits at the same __syncthreads, and none ends while others wait at one.  A breach
// prints the block, thread and call sites and aborts.
#pragma once

#include <functional>
#include <memory>

#include "fiber.h"
#include "stacks.h"

namespace cohort_emul {

class BlockRun {
 public:
  // `thread_body` runs once in each of `threads` fibers, with threadIdx set.
  BlockRun(unsigned threads, const std::function<void()> &thread_body);
  ~BlockRun();
  BlockRun(const BlockRun &) = delete;
  BlockRun &operator=(const BlockRun &) = delete;

  // Runs every thread to its end.
  void run();

  // The block this OS thread runs (nullptr outside run()).
  static BlockRun *current();

  // Jitter: after a round of its threads, a block pauses up to 300 us with this probability
  // (per thousand; 0, the default, never), so that a rank runs steps ahead of a peer now and
  // then, as ranks sharing a GPU with other work do.  Any thread, before launches.
  static void set_jitter(unsigned per_thousand);

  // From a thread of this block (cooperative.h's block_barrier and block_spin).
  bool barrier(bool predicate, const char *file, int line);
  void spin();

 private:
  enum class State { kRunnable, kWaiting, kDone };
  struct Thread {
    BlockRun *block;
    unsigned index;
    State state;
    Fiber fiber;
  };

  static void thread_main(void *arg);
  void end_thread();
  void idle();
  [[noreturn]] void fail(const char *what, const char *file, int line) const;

  const std::function<void()> &body_;
  const unsigned count_;
  const unsigned stride_;  // of the round-robin order: coprime with count_
  unsigned round_ = 0;     // rounds run: where the order starts
  std::unique_ptr<StackSet> stacks_;
  std::unique_ptr<Thread[]> threads_;
  Thread *running_ = nullptr;
  unsigned live_;         // threads not ended
  unsigned arrived_ = 0;  // threads waiting at the barrier
  bool arrived_or_ = false;
  bool released_or_ = false;  // the last barrier's answer
  const char *barrier_file_ = nullptr;
  int barrier_line_ = 0;
  bool spun_ = false;         // the thread just run stopped at a spin
  unsigned idle_rounds_ = 0;  // rounds in a row where every thread spun
};

}  // namespace cohort_emul
