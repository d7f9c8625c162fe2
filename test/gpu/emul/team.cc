#include "team.h"

#include <condition_variable>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "cooperative.h"

namespace cohort_emul {

namespace k = cohort::kernels;

// One rank's device memory: its window, its counters (as GpuTransport's counters_: the call
// counter, the finished blocks, the fault claim) and its fault record (pinned memory there).
struct EmulTeam::Rank {
  struct Counters {
    unsigned long long sequence = 0;
    unsigned int blocks_done = 0;
    unsigned int fault_claim = 0;
  };
  explicit Rank(size_t window_bytes)
      // 256 bytes, as cudaMalloc aligns at least; zeroed, as GpuTransport clears its window.
      : window(static_cast<char *>(std::aligned_alloc(256, (window_bytes + 255) / 256 * 256))) {
    if (!window) {
      std::fprintf(stderr, "EmulTeam: no memory for a window of %zu bytes\n", window_bytes);
      std::abort();
    }
    std::memset(window.get(), 0, window_bytes);
  }
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> window;
  Counters counters;
  k::DeviceFault fault{};
  k::DeviceTeam team{};
};

EmulTeam::EmulTeam(int ranks, int max_blocks, uint64_t timeout_ns) {
  if (ranks < 1 || ranks > k::kMaxLocalRanks) {
    std::fprintf(stderr, "EmulTeam: %d ranks (1 .. %d)\n", ranks, k::kMaxLocalRanks);
    std::abort();
  }
  const k::WindowLayout layout = k::window_layout(ranks);
  for (int r = 0; r < ranks; ++r) ranks_.push_back(std::make_unique<Rank>(layout.total_bytes));
  for (int r = 0; r < ranks; ++r) {
    k::DeviceTeam &t = ranks_[r]->team;
    t.rank = r;
    t.size = ranks;
    t.max_blocks = max_blocks;
    t.layout = layout;
    for (int q = 0; q < ranks; ++q) t.windows[q] = ranks_[q]->window.get();
    t.sequence = &ranks_[r]->counters.sequence;
    t.blocks_done = &ranks_[r]->counters.blocks_done;
    t.fault_claim = &ranks_[r]->counters.fault_claim;
    t.fault = &ranks_[r]->fault;
    t.timeout_ns = timeout_ns;
  }
}

EmulTeam::~EmulTeam() = default;

int EmulTeam::register_buffers(const std::vector<char *> &by_rank) {
  if (registered_.empty()) {
    registered_.assign(static_cast<size_t>(k::kMaxRegistrations) * k::kMaxLocalRanks, nullptr);
    for (auto &rank : ranks_) rank->team.registered = registered_.data();
  }
  const int slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % k::kMaxRegistrations;
  for (size_t q = 0; q < by_rank.size(); ++q) {
    registered_[static_cast<size_t>(slot) * k::kMaxLocalRanks + q] = by_rank[q];
  }
  return slot;
}

const k::DeviceTeam &EmulTeam::device(int rank) const { return ranks_.at(rank)->team; }
uint64_t EmulTeam::sequence(int rank) const { return ranks_.at(rank)->counters.sequence; }
unsigned EmulTeam::blocks_done(int rank) const { return ranks_.at(rank)->counters.blocks_done; }
unsigned EmulTeam::fault_claim(int rank) const { return ranks_.at(rank)->counters.fault_claim; }
k::DeviceFault EmulTeam::fault(int rank) const { return ranks_.at(rank)->fault; }

uint32_t EmulTeam::stop_word(int rank) const {
  const Rank &r = *ranks_.at(rank);
  return *reinterpret_cast<const volatile uint32_t *>(r.window.get() + r.team.layout.stop_offset);
}

void EmulTeam::abort(int by) {
  for (auto &rank : ranks_) {
    *reinterpret_cast<volatile uint32_t *>(rank->window.get() + rank->team.layout.stop_offset) =
        k::stop_word(by, -1);
  }
}

void EmulTeam::run(const std::function<void(int rank)> &fn, int stall_s) {
  std::mutex mutex;
  std::condition_variable done_cv;
  std::vector<bool> done(ranks_.size(), false);
  int running = size();
  std::vector<std::thread> threads;
  for (int r = 0; r < size(); ++r) {
    threads.emplace_back([&, r] {
      set_launch_mode(LaunchMode::kCooperative);
      fn(r);
      std::lock_guard<std::mutex> lock(mutex);
      done[r] = true;
      if (--running == 0) done_cv.notify_one();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!done_cv.wait_for(lock, std::chrono::seconds(stall_s), [&] { return running == 0; })) {
      std::string stuck;
      for (int r = 0; r < size(); ++r) {
        if (!done[r]) stuck += " " + std::to_string(r);
      }
      std::fprintf(stderr, "EmulTeam: ranks%s still running after %d s: a kernel hangs\n",
                   stuck.c_str(), stall_s);
      std::abort();
    }
  }
  for (std::thread &thread : threads) thread.join();
}

}  // namespace cohort_emul
