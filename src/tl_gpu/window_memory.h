// What a GPU team's device memory holds, per rank, as a function of its local rank count
// (kernels/device_team.h lays the window out): for cohort_info --gpu-memory and the line
// team creation logs at INFO.  Needs no CUDA.
#pragma once

#include <cstddef>
#include <string>

namespace cohort::tl_gpu {

struct WindowMemory {
  int ranks = 0;         // local ranks of the team
  size_t control = 0;    // flags, the stop word and the zero-copy descriptors
  size_t oneshot = 0;    // the one-shot area (grows with the ranks)
  size_t ll = 0;         // the LL allreduce's lines (grows with the ranks)
  size_t chunks = 0;     // the pipeline inboxes (one per block)
  size_t total = 0;      // the window: control + oneshot + ll + chunks
  size_t per_peer = 0;   // total / (ranks - 1); the total where the rank has no peer
  size_t per_block = 0;  // per_peer / blocks: per peer per channel, as NCCL counts
  size_t registry = 0;   // the registered-buffer table, allocated at the first registration
};

WindowMemory window_memory(int ranks);

// The table of window_memory(r) for r = 1, 2, 4, 8 and 16, with a note of what NCCL takes.
std::string describe_window_memory();

}  // namespace cohort::tl_gpu
