// team_emul_test's fault cases: a rank that never makes the call (the others time out) and an
// abort while ranks wait, checked as GpuTransport reads them (DeviceFault, the stop word in
// every window); and a later call on the stopped team, which must do nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "emul/team.h"
#include "kernels/allreduce.h"
#include "kernels/collectives.h"
#include "kernels/ll_line.h"
#include "team_test.h"

namespace cohort::team_test {
namespace {

using cohort_emul::EmulTeam;
using kernels::AllreduceAlgo;
using kernels::DeviceFault;

constexpr int kRanks = 3;
constexpr int kAbsent = 1;                    // the rank that never launches
constexpr uint64_t kTimeoutNs = 500'000'000;  // what the timeout case waits
constexpr uint64_t kNoTimeoutNs = 60'000'000'000;
constexpr double kPromptly = 10.0;  // seconds a stopped call may take at most
constexpr int kStallSeconds = 30;   // EmulTeam::run's watchdog here
constexpr size_t kCount = 3000;     // fp32: 2 blocks of one-shot and of LL, 1 of two-shot

const char *name_of(AllreduceAlgo algo) {
  switch (algo) {
    case AllreduceAlgo::kOneShot: return "oneshot";
    case AllreduceAlgo::kLl: return "ll";
    default: return "twoshot";
  }
}

// Every rank's buffers for one call of kCount fp32.
struct Buffers {
  Buffers() {
    for (int r = 0; r < kRanks; ++r) {
      src.emplace_back(kCount * 4, 0);
      dst.emplace_back(kCount * 4, 4);
    }
  }
  std::vector<GuardedBuffer> src, dst;
};

// One call on the ranks for which `launches` holds; `meanwhile` runs on the other ranks'
// threads.  Returns the seconds the run took.
double run_call(EmulTeam &team, AllreduceAlgo algo, Buffers &buffers,
                const std::function<bool(int)> &launches, const std::function<void(int)> &meanwhile,
                const std::string &name, Tally *tally) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<cudaError_t> status(kRanks, cudaSuccess);
  team.run(
      [&](int rank) {
        if (!launches(rank)) return meanwhile(rank);
        kernels::AllreduceArgs args;
        args.team = team.device(rank);
        args.src = buffers.src[rank].data();
        args.dst = buffers.dst[rank].data();
        args.count = kCount;
        args.algo = algo;
        status[rank] = kernels::launch_allreduce(args, nullptr);
      },
      kStallSeconds);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < kRanks; ++r) {
    const std::string at = name + " rank " + std::to_string(r) + ": ";
    if (status[r] != cudaSuccess) tally->fail(at + cudaGetErrorString(status[r]));
    if (std::string g = buffers.dst[r].check_guards(); !g.empty()) tally->fail(at + g);
    if (std::string g = buffers.src[r].check_guards(); !g.empty()) tally->fail(at + g);
  }
  if (seconds > kPromptly) tally->fail(name + ": took " + std::to_string(seconds) + " s");
  return seconds;
}

std::string describe(const DeviceFault &f) {
  char text[96];
  std::snprintf(text, sizeof text, "fault reason %u peer %d by %d sequence %llu", f.reason, f.peer,
                f.by, static_cast<unsigned long long>(f.sequence));
  return text;
}

void expect_fault(const EmulTeam &team, int rank, uint32_t reason, int peer, int by,
                  uint64_t sequence, const std::string &name, Tally *tally) {
  const DeviceFault f = team.fault(rank);
  if (f.reason != reason || f.peer != peer || f.by != by || f.sequence != sequence) {
    const DeviceFault want{reason, peer, by, 0, sequence};
    tally->fail(name + " rank " + std::to_string(rank) + ": " + describe(f) + ", want " +
                describe(want));
  }
}

void expect_sequence(const EmulTeam &team, int rank, uint64_t want, const std::string &name,
                     Tally *tally) {
  if (team.sequence(rank) != want || team.blocks_done(rank) != 0) {
    tally->fail(name + " rank " + std::to_string(rank) + ": sequence " +
                std::to_string(team.sequence(rank)) + " blocks_done " +
                std::to_string(team.blocks_done(rank)) + ", want " + std::to_string(want) +
                " and 0");
  }
}

// A call after the team stopped, on every rank: it must write nothing, and each rank's kernel
// reports the stop word it found (the first fault of a rank stays).
void expect_later_call_inert(EmulTeam &team, AllreduceAlgo algo, const std::string &name,
                             Tally *tally) {
  tally->count_case();
  Buffers buffers;
  std::vector<uint64_t> before(kRanks);
  for (int r = 0; r < kRanks; ++r) before[r] = team.sequence(r);
  run_call(
      team, algo, buffers, [](int) { return true; }, [](int) {}, name, tally);
  for (int r = 0; r < kRanks; ++r) {
    const GuardedBuffer &dst = buffers.dst[r];
    for (size_t b = 0; b < dst.bytes(); ++b) {
      if (dst.data()[b] != GuardedBuffer::kPoison) {
        tally->fail(name + " rank " + std::to_string(r) + ": output byte " + std::to_string(b) +
                    " written by a call of a stopped team");
        break;
      }
    }
    expect_sequence(team, r, before[r] + 1, name, tally);
  }
}

// Rank kAbsent never launches: the others' kernels wait kTimeoutNs for it, report kStopTimeout
// (or kStopPeerTimeout, when another rank's timeout reached them first) and stop the team.
void timeout_case(AllreduceAlgo algo, Tally *tally) {
  const std::string name = std::string("timeout ") + name_of(algo);
  tally->count_case();
  EmulTeam team(kRanks, 2, kTimeoutNs);
  Buffers buffers;
  const double seconds = run_call(
      team, algo, buffers, [](int r) { return r != kAbsent; }, [](int) {}, name, tally);
  if (seconds < kTimeoutNs / 1e9) {
    tally->fail(name + ": stopped after " + std::to_string(seconds) + " s, before the timeout");
  }
  std::vector<int> timed_out;
  for (int r = 0; r < kRanks; ++r) {
    if (team.fault(r).reason == kernels::kStopTimeout) timed_out.push_back(r);
  }
  if (timed_out.empty()) tally->fail(name + ": no rank reports kStopTimeout");
  const int first = timed_out.empty() ? 0 : timed_out.front();
  for (int r = 0; r < kRanks; ++r) {
    if (r == kAbsent) {
      expect_fault(team, r, kernels::kStopNone, 0, 0, 0, name, tally);
      expect_sequence(team, r, 0, name, tally);
      continue;
    }
    const bool own = team.fault(r).reason == kernels::kStopTimeout;
    expect_fault(team, r, own ? kernels::kStopTimeout : kernels::kStopPeerTimeout, kAbsent,
                 own ? r : first, 0, name, tally);
    expect_sequence(team, r, 1, name, tally);
  }
  // Every window holds the stop word of a rank that timed out waiting for kAbsent.
  for (int r = 0; r < kRanks; ++r) {
    const uint32_t word = team.stop_word(r);
    const int by = static_cast<int>(word & 0xffff) - 1;
    bool known = false;
    for (int q : timed_out) known = known || q == by;
    if (word >> 16 != kAbsent + 1 || !known) {
      tally->fail(name + " window " + std::to_string(r) + ": stop word " + std::to_string(word));
    }
  }
  // kAbsent's kernel reports the stop word of its window (when two ranks timed out, either's).
  const int stopped_by = static_cast<int>(team.stop_word(kAbsent) & 0xffff) - 1;
  expect_later_call_inert(team, algo, name + ", later call", tally);
  expect_fault(team, kAbsent, kernels::kStopPeerTimeout, kAbsent, stopped_by, 0,
               name + ", later call", tally);
  for (int r : timed_out) {
    expect_fault(team, r, kernels::kStopTimeout, kAbsent, r, 0, name + ", later call", tally);
  }
}

// LL: returns once every launching rank's every thread stored its first line into kAbsent's
// window (each stores its line into every window before it waits for any): what is left is
// waiting for kAbsent's lines.
void wait_for_the_absent_lines(const EmulTeam &team, int blocks) {
  const kernels::DeviceTeam t = team.device(kAbsent);
  const size_t lines = std::min<size_t>(kCount * 4 / kernels::kLlPayload,
                                        static_cast<size_t>(blocks) * kernels::kCollThreads);
  auto stored = [&](int writer, size_t i) {  // the first call: parity 0, flag 1
    const auto *lines = reinterpret_cast<const volatile kernels::LlLine *>(
        t.windows[kAbsent] + t.layout.ll_offset + writer * kernels::kLlSlotBytes);
    return kernels::ll_flag(lines[i].half[0]) == 1 && kernels::ll_flag(lines[i].half[1]) == 1;
  };
  for (;;) {
    bool all = true;
    for (int q = 0; q < kRanks; ++q) {
      for (size_t i = 0; i < lines && q != kAbsent; ++i) all = all && stored(q, i);
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Returns once every launching rank's kernel heard from every other launching rank on every
// block of the call: what is left is waiting for kAbsent.
void wait_for_the_absent(const EmulTeam &team, AllreduceAlgo algo) {
  kernels::AllreduceArgs args;
  args.team = team.device(0);
  args.count = kCount;
  args.algo = algo;
  const int blocks = kernels::allreduce_blocks(args);
  if (algo == AllreduceAlgo::kLl) return wait_for_the_absent_lines(team, blocks);
  auto heard = [&](int owner, int writer, int block) {
    const char *window = team.device(owner).windows[owner];
    return *reinterpret_cast<const volatile uint64_t *>(
               window + kernels::flag_offset(writer, block, kernels::kFlagArrive)) != 0;
  };
  for (;;) {
    bool all = true;
    for (int r = 0; r < kRanks; ++r) {
      for (int q = 0; q < kRanks; ++q) {
        if (r == q || r == kAbsent || q == kAbsent) continue;
        for (int b = 0; b < blocks; ++b) all = all && heard(r, q, b);
      }
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Ranks other than kAbsent wait for it until rank `by`'s host aborts the team (its stop word
// into every window, from a thread of its own): every kernel stops with kStopAbort by `by`.
void abort_case(AllreduceAlgo algo, int by, Tally *tally) {
  const std::string name = std::string("abort by rank ") + std::to_string(by) + " " + name_of(algo);
  tally->count_case();
  EmulTeam team(kRanks, 2, kNoTimeoutNs);
  Buffers buffers;
  run_call(
      team, algo, buffers, [](int r) { return r != kAbsent; },
      [&](int) {
        wait_for_the_absent(team, algo);
        team.abort(by);
      },
      name, tally);
  for (int r = 0; r < kRanks; ++r) {
    if (team.stop_word(r) != kernels::stop_word(by, -1)) {
      tally->fail(name + " window " + std::to_string(r) + ": stop word " +
                  std::to_string(team.stop_word(r)));
    }
    if (r == kAbsent) {
      expect_fault(team, r, kernels::kStopNone, 0, 0, 0, name, tally);
      continue;
    }
    expect_fault(team, r, kernels::kStopAbort, kAbsent, by, 0, name, tally);
    expect_sequence(team, r, 1, name, tally);
  }
  expect_later_call_inert(team, algo, name + ", later call", tally);
  expect_fault(team, kAbsent, kernels::kStopAbort, -1, by, 0, name + ", later call", tally);
  for (int r = 0; r < kRanks; ++r) {
    if (r != kAbsent) expect_fault(team, r, kernels::kStopAbort, kAbsent, by, 0, name, tally);
  }
}

}  // namespace

void run_fault_cases(const Options &, Tally *tally) {
  for (AllreduceAlgo algo :
       {AllreduceAlgo::kOneShot, AllreduceAlgo::kTwoShot, AllreduceAlgo::kLl}) {
    timeout_case(algo, tally);
    abort_case(algo, algo == AllreduceAlgo::kTwoShot ? 0 : kAbsent, tally);
  }
}

}  // namespace cohort::team_test
