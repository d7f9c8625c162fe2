// glibc's _FORTIFY_SOURCE turns longjmp into __longjmp_chk, which aborts a jump to another
// stack ("longjmp causes uninitialized stack frame"): switching stacks is this file's purpose.
#undef _FORTIFY_SOURCE

#include "fiber.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifndef COHORT_EMUL_FIBER_ASM
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define COHORT_EMUL_ASAN 1
#endif

#ifdef COHORT_EMUL_FIBER_ASM
// cohort_emul_switch(save, load): pushes the callee-saved registers, stores the stack pointer
// in *save, takes `load` as the stack pointer and pops the registers saved there.  (MXCSR and
// the x87 control word are not switched: no emulated thread changes them.)
// cohort_emul_fiber_entry: where a new fiber's first switch returns to; calls r13(r12).
extern "C" void cohort_emul_switch(void **save, void *load);
extern "C" void cohort_emul_fiber_entry();
asm(R"(
  .pushsection .text
  .p2align 4
  .globl cohort_emul_switch
  .hidden cohort_emul_switch
  .type cohort_emul_switch, @function
cohort_emul_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cohort_emul_switch, .-cohort_emul_switch

  .p2align 4
  .globl cohort_emul_fiber_entry
  .hidden cohort_emul_fiber_entry
  .type cohort_emul_fiber_entry, @function
cohort_emul_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size cohort_emul_fiber_entry, .-cohort_emul_fiber_entry
  .popsection
)");
#endif

namespace cohort_emul {
namespace {

// ASan's side of a switch: announced before it (the stack switched to), confirmed after it on
// the new stack.  fake_stack_save: null when the stack left is done with for good.
inline void before_switch(void **fake_stack_save, const void *bottom, size_t bytes) {
#ifdef COHORT_EMUL_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, bytes);
#else
  (void)fake_stack_save, (void)bottom, (void)bytes;
#endif
}

inline void after_switch(void *fake_stack_save, const void **old_bottom, size_t *old_bytes) {
#ifdef COHORT_EMUL_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, old_bottom, old_bytes);
#else
  (void)fake_stack_save, (void)old_bottom, (void)old_bytes;
#endif
}

}  // namespace

// The fiber's life, from its first resume() (ASan's side of that switch done) to its last
// switch out.
void Fiber::run(Fiber *self) {
  self->entry_(self->arg_);
  self->end();
}

void Fiber::resume() {
  before_switch(&scheduler_fake_stack_, stack_, stack_bytes_);
  switch_in();
  after_switch(scheduler_fake_stack_, nullptr, nullptr);
}

void Fiber::suspend() {
  before_switch(&fiber_fake_stack_, scheduler_stack_, scheduler_stack_bytes_);
  switch_out();
  after_switch(fiber_fake_stack_, nullptr, nullptr);
}

void Fiber::end() {
  before_switch(nullptr, scheduler_stack_, scheduler_stack_bytes_);
  switch_out();
  std::abort();  // a finished fiber is never resumed
}

#ifdef COHORT_EMUL_FIBER_ASM

// Where cohort_emul_fiber_entry goes at the first resume().
void Fiber::enter(Fiber *self) {
  after_switch(nullptr, &self->scheduler_stack_, &self->scheduler_stack_bytes_);
  run(self);
}

void Fiber::start(void *stack, size_t bytes, Entry entry, void *arg) {
  stack_ = stack;
  stack_bytes_ = bytes;
  entry_ = entry;
  arg_ = arg;
#ifdef COHORT_EMUL_ASAN
  // The frames a finished fiber left at the top (ended by a switch, not a return) may keep
  // their redzones.
  __asan_unpoison_memory_region(static_cast<char *>(stack) + bytes - 4096, 4096);
#endif
  // What cohort_emul_switch pops: r15, r14, r13 (enter), r12 (this), rbx, rbp (0: the end of the
  // frame chain), then the return address.  The entry then calls with the stack 16-byte
  // aligned, as the ABI wants.
  const uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t{15};
  void **frame = reinterpret_cast<void **>(top - 72);
  frame[0] = frame[1] = nullptr;
  frame[2] = reinterpret_cast<void *>(&Fiber::enter);
  frame[3] = this;
  frame[4] = frame[5] = nullptr;
  frame[6] = reinterpret_cast<void *>(&cohort_emul_fiber_entry);
  fiber_sp_ = frame;
}

void Fiber::switch_in() { cohort_emul_switch(&scheduler_sp_, fiber_sp_); }
void Fiber::switch_out() { cohort_emul_switch(&fiber_sp_, scheduler_sp_); }

#else  // ucontext to enter a new stack, _setjmp/_longjmp to switch

void Fiber::start(void *stack, size_t bytes, Entry entry, void *arg) {
  stack_ = stack;
  stack_bytes_ = bytes;
  entry_ = entry;
  arg_ = arg;
  ucontext_t context;
  if (getcontext(&context) != 0) {
    std::perror("cohort_emul: getcontext");
    std::abort();
  }
  context.uc_stack.ss_sp = stack;
  context.uc_stack.ss_size = bytes;
  context.uc_link = nullptr;
  // makecontext passes ints: the fiber's address in two halves.
  const auto self = reinterpret_cast<uintptr_t>(this);
  makecontext(&context, reinterpret_cast<void (*)()>(&trampoline), 2,
              static_cast<unsigned>(self >> 32), static_cast<unsigned>(self));
  // setcontext, not swapcontext: the trampoline comes back with _longjmp, and ASan warns about
  // swapcontext (which it intercepts).
  if (_setjmp(scheduler_env_) == 0) {
    before_switch(&scheduler_fake_stack_, stack_, stack_bytes_);
    setcontext(&context);
    std::perror("cohort_emul: setcontext");
    std::abort();
  }
  after_switch(scheduler_fake_stack_, nullptr, nullptr);
}

// On the new stack: back to start() at once; run() follows at the first resume().
void Fiber::trampoline(unsigned hi, unsigned lo) {
  Fiber *const self = reinterpret_cast<Fiber *>(static_cast<uintptr_t>(hi) << 32 | lo);
  after_switch(nullptr, &self->scheduler_stack_, &self->scheduler_stack_bytes_);
  if (_setjmp(self->fiber_env_) == 0) {
    before_switch(&self->fiber_fake_stack_, self->scheduler_stack_, self->scheduler_stack_bytes_);
    _longjmp(self->scheduler_env_, 1);
  }
  after_switch(self->fiber_fake_stack_, nullptr, nullptr);
  run(self);
  std::abort();
}

void Fiber::switch_in() {
  if (_setjmp(scheduler_env_) == 0) _longjmp(fiber_env_, 1);
}

void Fiber::switch_out() {
  if (_setjmp(fiber_env_) == 0) _longjmp(scheduler_env_, 1);
}

#endif

}  // namespace cohort_emul
