// The GPU window's memory, part by part (see window_memory.h).
#include "tl_gpu/window_memory.h"

#include <cstdio>

#include "kernels/device_team.h"

namespace cohort::tl_gpu {

namespace k = cohort::kernels;

WindowMemory window_memory(int ranks) {
  const k::WindowLayout layout = k::window_layout(ranks);
  WindowMemory m;
  m.ranks = ranks;
  m.control = layout.oneshot_offset;
  m.oneshot = layout.ll_offset - layout.oneshot_offset;
  m.ll = layout.chunks_offset - layout.ll_offset;
  m.chunks = layout.total_bytes - layout.chunks_offset;
  m.total = layout.total_bytes;
  m.per_peer = ranks > 1 ? m.total / static_cast<size_t>(ranks - 1) : m.total;
  m.per_block = m.per_peer / k::kMaxBlocks;
  m.registry = sizeof(char *) * k::kMaxRegistrations * k::kMaxLocalRanks;
  return m;
}

namespace {

std::string mib(size_t bytes) {
  char text[32];
  snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

std::string kib(size_t bytes) {
  char text[32];
  snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return text;
}

}  // namespace

std::string describe_window_memory() {
  std::string out =
      "GPU memory per rank of a GPU team (one window, shared by all its peers and blocks):\n";
  char line[512];
  snprintf(line, sizeof line, "  %5s  %10s  %10s  %10s  %10s  %10s  %10s  %14s\n", "ranks",
           "control", "one-shot", "LL", "chunks", "window", "per peer", "per peer/block");
  out += line;
  for (int ranks : {2, 4, 8, k::kMaxLocalRanks}) {
    const WindowMemory m = window_memory(ranks);
    snprintf(line, sizeof line, "  %5d  %10s  %10s  %10s  %10s  %10s  %10s  %14s\n", ranks,
             kib(m.control).c_str(), kib(m.oneshot).c_str(), kib(m.ll).c_str(),
             mib(m.chunks).c_str(), mib(m.total).c_str(), mib(m.per_peer).c_str(),
             kib(m.per_block).c_str());
    out += line;
  }
  const WindowMemory any = window_memory(1);
  snprintf(line, sizeof line,
           "  A rank alone on its host has no window (its calls are copies).\n"
           "  A block is a channel (NCCL: about 9 MB per peer per channel); a kernel uses up to "
           "%d.\n  Registering buffers (cohort_mem_register) adds one table of %s per team; the "
           "buffers stay the caller's.\n",
           k::kMaxBlocks, kib(any.registry).c_str());
  out += line;
  return out;
}

}  // namespace cohort::tl_gpu
