// Stacks for the fibers of one block (fiber.h), each with a guard page below it, so that an
// overflow faults instead of writing into a neighbour's stack.  A launch takes a set and gives
// it back when its block ends; sets are kept for the next launch, whose threads then find
// their pages already mapped (a fresh mapping costs a page fault per page a thread touches).
#pragma once

#include <cstddef>
#include <memory>

namespace cohort_emul {

class StackSet {
 public:
  // A set of `count` stacks: a kept one if there is one, else a new mapping.
  static std::unique_ptr<StackSet> take(unsigned count);
  // Keeps `set` for a later take().
  static void give_back(std::unique_ptr<StackSet> set);

  ~StackSet();
  StackSet(const StackSet &) = delete;
  StackSet &operator=(const StackSet &) = delete;

  unsigned count() const { return count_; }
  void *stack(unsigned i) const { return base_ + i * stride_ + guard_bytes_; }
  size_t stack_bytes() const { return stride_ - guard_bytes_; }

 private:
  explicit StackSet(unsigned count);

  unsigned count_;
  size_t guard_bytes_;
  size_t stride_;
  char *base_;
};

}  // namespace cohort_emul
