// team_emul_test's cases of the shim itself (emul/cooperative.h): what the collective cases
// rely on.  Barriers with a predicate, shared memory per block, progress of a thread that
// polls memory without sleeping (for another block, or for a thread of its own block), and the
// barrier contract's checks, which must abort the kernel (run in a forked child).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cuda/atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "team_test.h"

namespace cohort::team_test {
namespace {

constexpr unsigned kBlocks = 3;
constexpr unsigned kThreads = 64;

// out[thread] = 1 + 2 x (the first barrier's answer) + 4 x (the second's): only the hot
// thread's predicate is true, at the first barrier.
__global__ void barrier_or_kernel(int *out, unsigned hot_block, unsigned hot_thread) {
  const int first = __syncthreads_or(blockIdx.x == hot_block && threadIdx.x == hot_thread);
  const int second = __syncthreads_or(0);
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1 + 2 * first + 4 * second;
}

// Each thread reads what the opposite thread of its block wrote to shared memory.
__global__ void reverse_kernel(unsigned *out) {
  __shared__ unsigned values[kThreads];
  values[threadIdx.x] = blockIdx.x * 1000 + threadIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = values[blockDim.x - 1 - threadIdx.x];
}

// Block b waits for block b + 1 by polling its flag (no __nanosleep): the last block goes
// first.  out[b] = the block's place in the order.
__global__ void chain_kernel(unsigned *flags, unsigned *order, unsigned *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x + 1 < gridDim.x) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> next(flags[blockIdx.x + 1]);
    while (next.load(cuda::memory_order_acquire) == 0) {
    }
  }
  out[blockIdx.x] = atomicAdd(order, 1u);
  cuda::atomic_ref<unsigned, cuda::thread_scope_device>(flags[blockIdx.x])
      .store(1, cuda::memory_order_release);
}

// Thread 0 polls a flag that the block's last thread raises, with no barrier between them.
__global__ void intra_block_kernel(unsigned *flag, unsigned *out) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_block> ready(*flag);
  if (threadIdx.x == 0) {
    while (ready.load(cuda::memory_order_acquire) == 0) {
    }
    out[0] = 1;
  }
  if (threadIdx.x == blockDim.x - 1) ready.store(1, cuda::memory_order_release);
}

// Breaches of the barrier contract.
__global__ void partial_barrier_kernel() {
  if (threadIdx.x < 32) __syncthreads();
}
__global__ void two_barriers_kernel() {
  if (threadIdx.x % 2) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

template <class... Args>
void launch(void (*kernel)(Args...), unsigned blocks, Args... args) {
  void *params[] = {&args...};
  cudaLaunchKernel(kernel, dim3(blocks), dim3(kThreads), params, 0, nullptr);
}

void check(bool ok, const std::string &what, Tally *tally) {
  tally->count_case();
  if (!ok) tally->fail("shim: " + what);
}

void barrier_cases(Tally *tally) {
  std::vector<int> out(kBlocks * kThreads);
  launch(barrier_or_kernel, kBlocks, out.data(), 1u, kThreads - 5);
  bool ok = true;
  for (unsigned i = 0; i < out.size(); ++i) ok = ok && out[i] == (i / kThreads == 1 ? 3 : 1);
  check(ok, "__syncthreads_or answers per block, and only for its own barrier", tally);

  std::vector<unsigned> reversed(kBlocks * kThreads);
  launch(reverse_kernel, kBlocks, reversed.data());
  ok = true;
  for (unsigned i = 0; i < reversed.size(); ++i) {
    ok = ok && reversed[i] == i / kThreads * 1000 + (kThreads - 1 - i % kThreads);
  }
  check(ok, "__shared__ memory is the block's", tally);
}

void progress_cases(Tally *tally) {
  constexpr unsigned kChain = 6;
  std::vector<unsigned> flags(kChain), out(kChain);
  unsigned order = 0;
  launch(chain_kernel, kChain, flags.data(), &order, out.data());
  bool ok = true;
  for (unsigned b = 0; b < kChain; ++b) ok = ok && out[b] == kChain - 1 - b;
  check(ok, "a block polling another block's flag lets it run", tally);

  unsigned flag = 0, seen = 0;
  launch(intra_block_kernel, 1, &flag, &seen);
  check(seen == 1, "a thread polling its own block's flag lets the block's threads run", tally);
}

// Runs body() in a forked child, its stderr captured: true when the child aborted within 30 s
// and said `expected`.
bool aborts_saying(const std::function<void()> &body, const std::string &expected) {
  std::fflush(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    body();
    _exit(0);
  }
  close(pipe_fds[1]);
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  std::string said;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    char buffer[512];
    ssize_t n;
    while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) said.append(buffer, n);
    if (waitpid(child, &status, WNOHANG) == child) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(pipe_fds[0]);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
         said.find(expected) != std::string::npos;
}

void contract_cases(Tally *tally) {
  check(aborts_saying([] { launch(partial_barrier_kernel, 1); },
                      "ended while other threads wait at the barrier"),
        "a barrier that some threads skip aborts", tally);
  check(aborts_saying([] { launch(two_barriers_kernel, 1); },
                      "waits at another barrier than the other threads"),
        "threads at different barriers abort", tally);
  check(aborts_saying(
            [] {
              cohort_emul::set_launch_mode(cohort_emul::LaunchMode::kSequential);
              launch(partial_barrier_kernel, 1);
            },
            "in a sequential launch"),
        "a barrier in a sequential launch aborts", tally);
}

}  // namespace

void run_shim_cases(const Options &, Tally *tally) {
  const cohort_emul::LaunchMode mode = cohort_emul::launch_mode();
  cohort_emul::set_launch_mode(cohort_emul::LaunchMode::kCooperative);
  barrier_cases(tally);
  progress_cases(tally);
  contract_cases(tally);
  cohort_emul::set_launch_mode(mode);
}

}  // namespace cohort::team_test
