#include "stacks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

namespace cohort_emul {
namespace {

// What one emulated thread may use: the kernels' frames are small, but ASan's redzones make
// every frame larger.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = 256 << 10;
#else
constexpr size_t kStackBytes = 64 << 10;
#endif

std::mutex kept_mutex;
std::vector<std::unique_ptr<StackSet>> &kept() {
  static std::vector<std::unique_ptr<StackSet>> sets;
  return sets;
}

}  // namespace

StackSet::StackSet(unsigned count) : count_(count) {
  guard_bytes_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stride_ = guard_bytes_ + kStackBytes;
  void *base = mmap(nullptr, stride_ * count, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    std::perror("cohort_emul: mmap of fiber stacks");
    std::abort();
  }
  base_ = static_cast<char *>(base);
  for (unsigned i = 0; i < count; ++i) {
    if (mprotect(base_ + i * stride_, guard_bytes_, PROT_NONE) != 0) {
      std::perror("cohort_emul: mprotect of a stack's guard page");
      std::abort();
    }
  }
}

StackSet::~StackSet() { munmap(base_, stride_ * count_); }

std::unique_ptr<StackSet> StackSet::take(unsigned count) {
  {
    std::lock_guard<std::mutex> lock(kept_mutex);
    auto &sets = kept();
    for (auto it = sets.begin(); it != sets.end(); ++it) {
      if ((*it)->count() != count) continue;
      std::unique_ptr<StackSet> set = std::move(*it);
      sets.erase(it);
      return set;
    }
  }
  return std::unique_ptr<StackSet>(new StackSet(count));
}

void StackSet::give_back(std::unique_ptr<StackSet> set) {
  std::lock_guard<std::mutex> lock(kept_mutex);
  kept().push_back(std::move(set));
}

}  // namespace cohort_emul
