// N emulated local ranks in one process, for team_emul_test: each rank's window in host memory
// and its DeviceTeam filled as tl_gpu::GpuTransport fills it (src/tl_gpu/gpu_transport.cc),
// and run(), which calls a function for every rank at once on OS threads whose launches are
// cooperative (cooperative.h).  A launcher called there (launch_allreduce, or any collective
// over a DeviceTeam) returns when its kernel ended, as after a cudaStreamSynchronize.
//
//   EmulTeam team(4);
//   team.run([&](int rank) {
//     AllreduceArgs args{.team = team.device(rank), .src = in[rank], .dst = out[rank], ...};
//     status[rank] = launch_allreduce(args, nullptr);
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/device_team.h"

namespace cohort_emul {

class EmulTeam {
 public:
  // `max_blocks`: what every rank's "GPU" holds at once (small keeps the fibers few);
  // `timeout_ns`: how long a kernel waits for a peer before it stops the team.
  explicit EmulTeam(int ranks, int max_blocks = 4, uint64_t timeout_ns = 60'000'000'000);
  ~EmulTeam();
  EmulTeam(const EmulTeam &) = delete;
  EmulTeam &operator=(const EmulTeam &) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  // What rank `rank`'s launches take (args.team).
  const cohort::kernels::DeviceTeam &device(int rank) const;

  // Rank `rank`'s device state, as its host would read it after the launches returned.
  uint64_t sequence(int rank) const;
  unsigned blocks_done(int rank) const;
  unsigned fault_claim(int rank) const;
  cohort::kernels::DeviceFault fault(int rank) const;
  uint32_t stop_word(int rank) const;  // in the rank's window

  // A registration (tl_gpu/registrations.h) of one buffer per rank, by rank: its slot in the
  // team's table, which every rank maps the same way here (one address space).  Slots are
  // taken in turn and reused after kMaxRegistrations.  Not while kernels run.
  int register_buffers(const std::vector<char *> &by_rank);

  // GpuTransport::abort() of rank `by`'s host: its stop word into every window.  Any thread
  // may call it, while kernels run or not.
  void abort(int by);

  // Calls fn(rank) for every rank at once, each on an OS thread of its own whose launches are
  // cooperative; returns when every call returned.  A call still running after `stall_s`
  // seconds aborts the process, naming the ranks (a hang in CI then says where it is).
  void run(const std::function<void(int rank)> &fn, int stall_s = 120);

 private:
  struct Rank;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<char *> registered_;  // the table every rank's DeviceTeam::registered points to
  int next_slot_ = 0;
};

}  // namespace cohort_emul
