// Cooperative launches: how the shim runs kernels whose threads wait for each other (block
// barriers) or for other blocks and ranks (flags in memory), e.g. the collectives of
// src/kernels/allreduce.cu.
//
// Every block of the grid runs on an OS thread of its own, all at once (as the blocks of a
// collective are all resident on a GPU); the block's threads are fibers on that OS thread
// (block.h), switched only where CUDA code waits: __syncthreads / __syncthreads_or (a block
// barrier), __nanosleep and polling loads (a spin).  So threads of one block never run at the
// same time, while blocks (and the ranks of an EmulTeam, team.h) do.
//
// A launch is cooperative when the OS thread launching it chose so (set_launch_mode; every
// rank of EmulTeam::run does); otherwise it is sequential, kernel_emul_test's mode: every
// thread of the grid in turn on the calling thread, where a barrier is an error.
#pragma once

#include <functional>

namespace cohort_emul {

enum class LaunchMode { kSequential, kCooperative };

// This OS thread's mode for its launches (kSequential until set).
LaunchMode launch_mode();
void set_launch_mode(LaunchMode mode);

// Runs thread_body once per thread of a grid of `blocks` x `threads`, cooperatively, with
// blockIdx, threadIdx, blockDim and gridDim set; returns when every thread returned.
void run_grid(unsigned blocks, unsigned threads, const std::function<void()> &thread_body);

// What the device intrinsics of the prelude call, from a thread of a running kernel.
// A block barrier: true when `predicate` held for any thread.  file/line name the call site:
// every thread must wait at the same one.
bool block_barrier(bool predicate, const char *file, int line);
// The thread waits for something: the next thread (or block, or rank) runs first.
void block_spin();
// A load that may be a poll of memory another thread writes: now and then a spin, so that a
// thread polling without __nanosleep cannot starve the thread it waits for.
void block_poll();

}  // namespace cohort_emul
