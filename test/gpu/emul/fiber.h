// One emulated GPU thread's execution context: a stack of its own and the registers to resume
// it, switched cooperatively with the OS thread that runs it (the block's scheduler,
// block.h).  Control goes scheduler -> fiber -> scheduler only, never fiber to fiber.
//
// On x86-64 a switch is a dozen instructions of our own (the callee-saved registers and the
// stack pointer): no system call, and nothing ASan intercepts.  Elsewhere (or with
// COHORT_EMUL_PORTABLE_FIBERS) ucontext enters a new stack once and _setjmp/_longjmp switch,
// as QEMU's coroutine-ucontext.c does.  Under ASan every switch is announced
// (__sanitizer_start/finish_switch_fiber), so ASan knows which stack it is on.
#pragma once

#include <cstddef>

#if defined(__x86_64__) && !defined(COHORT_EMUL_PORTABLE_FIBERS)
#define COHORT_EMUL_FIBER_ASM 1
#else
#include <csetjmp>
#endif

namespace cohort_emul {

class Fiber {
 public:
  using Entry = void (*)(void *arg);

  Fiber() = default;
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  // Prepares entry(arg) to run on [stack, stack + bytes) at the next resume().  The stack may
  // be one a finished fiber used before.
  void start(void *stack, size_t bytes, Entry entry, void *arg);
  // From the scheduler: runs the fiber until it suspends or its entry returns.
  void resume();
  // From inside the fiber: back to the scheduler, which resumes it later.
  void suspend();

 private:
  static void run(Fiber *self);
  [[noreturn]] void end();
  void switch_in();
  void switch_out();

#ifdef COHORT_EMUL_FIBER_ASM
  static void enter(Fiber *self);
  void *fiber_sp_ = nullptr;  // the fiber's saved stack pointer (its registers are below it)
  void *scheduler_sp_ = nullptr;
#else
  [[noreturn]] static void trampoline(unsigned hi, unsigned lo);
  jmp_buf fiber_env_;
  jmp_buf scheduler_env_;
#endif
  void *stack_ = nullptr;
  size_t stack_bytes_ = 0;
  Entry entry_ = nullptr;
  void *arg_ = nullptr;
  // ASan: the scheduler's stack (learnt at the first switch) and each side's fake stack.
  const void *scheduler_stack_ = nullptr;
  size_t scheduler_stack_bytes_ = 0;
  void *fiber_fake_stack_ = nullptr;
  void *scheduler_fake_stack_ = nullptr;
};

}  // namespace cohort_emul
