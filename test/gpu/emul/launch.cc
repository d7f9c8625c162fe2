// Launch modes, cooperative grids and kernels launched by address (cooperative.h,
// cuda_runtime_api.h).
#include <sched.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "block.h"
#include "cooperative.h"
#include "cuda_runtime_api.h"
#include "workers.h"

namespace cohort_emul {
namespace {

thread_local LaunchMode this_thread_mode = LaunchMode::kSequential;

// Loads between two spins of a polling thread: a thread that polls with __nanosleep spins
// more often anyway.
constexpr unsigned kLoadsPerSpin = 256;
thread_local unsigned loads_since_spin = 0;

std::mutex invokers_mutex;
std::map<const void *, KernelInvoker> &invokers() {
  static std::map<const void *, KernelInvoker> map;
  return map;
}

// kernel_emul_test's order: blocks last to first, threads scrambled (block.x a multiple of 32,
// so 7 is coprime with it).
void run_grid_in_turn(unsigned blocks, unsigned threads, const std::function<void()> &body) {
  const unsigned stride = threads % 7 == 0 ? 1 : 7;
  for (unsigned b = blocks; b-- > 0;) {
    for (unsigned i = 0; i < threads; ++i) {
      blockIdx = {b, 0, 0};
      threadIdx = {static_cast<unsigned>(static_cast<size_t>(i) * stride % threads), 0, 0};
      body();
    }
  }
}

}  // namespace

LaunchMode launch_mode() { return this_thread_mode; }
void set_launch_mode(LaunchMode mode) { this_thread_mode = mode; }

void run_grid(unsigned blocks, unsigned threads, const std::function<void()> &thread_body) {
  std::mutex mutex;
  std::condition_variable all_done;
  unsigned running = blocks;
  for (unsigned b = 0; b < blocks; ++b) {
    run_on_worker([&, b] {
      blockIdx = {b, 0, 0};
      gridDim = {blocks, 1, 1};
      blockDim = {threads, 1, 1};
      {
        BlockRun block(threads, thread_body);
        block.run();
      }
      // Notified under the lock: run_grid's frame, which holds them, may go once it is free.
      std::lock_guard<std::mutex> lock(mutex);
      if (--running == 0) all_done.notify_one();
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  all_done.wait(lock, [&] { return running == 0; });
}

void launch(dim3 grid, dim3 block, const std::function<void()> &thread_body) {
  if (grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1) {
    std::fprintf(stderr,
                 "cohort_emul: a launch of %ux%ux%u blocks of %ux%ux%u: the shim runs "
                 "one-dimensional grids only\n",
                 grid.x, grid.y, grid.z, block.x, block.y, block.z);
    std::abort();
  }
  if (this_thread_mode == LaunchMode::kCooperative) return run_grid(grid.x, block.x, thread_body);
  gridDim = {grid.x, 1, 1};
  blockDim = {block.x, 1, 1};
  run_grid_in_turn(grid.x, block.x, thread_body);
}

bool block_barrier(bool predicate, const char *file, int line) {
  if (BlockRun *block = BlockRun::current()) return block->barrier(predicate, file, line);
  std::fprintf(stderr,
               "cohort_emul: __syncthreads at %s:%d in a sequential launch, where threads run "
               "one after another: launch it from a cooperative thread (cooperative.h)\n",
               file, line);
  std::abort();
}

void block_spin() {
  loads_since_spin = 0;
  if (BlockRun *block = BlockRun::current()) {
    block->spin();
  } else {
    sched_yield();
  }
}

void block_poll() {
  if (++loads_since_spin >= kLoadsPerSpin) block_spin();
}

void register_invoker(const void *kernel, KernelInvoker invoker) {
  std::lock_guard<std::mutex> lock(invokers_mutex);
  invokers()[kernel] = invoker;
}

KernelInvoker find_invoker(const void *kernel) {
  {
    std::lock_guard<std::mutex> lock(invokers_mutex);
    auto it = invokers().find(kernel);
    if (it != invokers().end()) return it->second;
  }
  std::fprintf(stderr,
               "cohort_emul: kernel %p launched by address is not registered: the emulation's "
               "source must call cohort_emul::register_kernel for it\n",
               kernel);
  std::abort();
}

}  // namespace cohort_emul
