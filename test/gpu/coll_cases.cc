// team_emul_test's cases of the collectives besides allreduce (collectives.h): broadcast,
// reduce, allgather, reduce-scatter, alltoall and barrier through launch_collective on every
// rank of an EmulTeam, each output against what the collective means (copies of the right
// rank's blocks, or the host reference's reduction of them), and runs of mixed collectives
// back to back on one team, which must share its windows.
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emul/block.h"
#include "emul/team.h"
#include "kernels/allreduce.h"
#include "kernels/collectives.h"
#include "reduce_reference.h"
#include "team_test.h"

namespace cohort::team_test {
namespace {

using cohort_emul::EmulTeam;
using kernels::CollAlgo;
using kernels::CollArgs;
using kernels::CollKind;
using kernels::DType;
using kernels::dtype_size;
using kernels::RedOp;

const char *const kKindNames[] = {"broadcast", "reduce",  "allgather", "reduce_scatter",
                                  "alltoall",  "barrier", "allreduce"};

struct Call {
  CollKind kind;
  CollAlgo algo;
  DType dtype;
  RedOp op;
  size_t count;  // collectives.h's count
  int root;
  bool in_place;
  size_t offset = 0;  // elements past cudaMalloc's alignment
  // kZeroCopy: the rank that registers nothing (every rank then runs pipelined); -1: every
  // rank registers its buffers.
  int unregistered = -1;
};

const char *algo_name(CollAlgo algo) {
  switch (algo) {
    case CollAlgo::kOneShot: return "oneshot";
    case CollAlgo::kPipelined: return "pipelined";
    case CollAlgo::kLl: return "ll";
    default: return "zerocopy";
  }
}

bool reduces(CollKind k) {
  return k == CollKind::kReduce || k == CollKind::kReduceScatter || k == CollKind::kAllreduce;
}

std::string describe(const Call &c, int ranks) {
  char text[200];
  std::snprintf(text, sizeof text, "%s ranks=%d %s %s %s count=%zu root=%d %s offset=%zu",
                kKindNames[static_cast<int>(c.kind)], ranks, algo_name(c.algo),
                kernel_test::kDtypeNames[static_cast<int>(c.dtype)],
                reduces(c.kind) ? kernel_test::kOpNames[static_cast<int>(c.op)] : "-", c.count,
                c.root, c.in_place ? "in-place" : "out-of-place", c.offset);
  std::string out = text;
  if (c.algo == CollAlgo::kZeroCopy && c.unregistered >= 0) {
    out += " rank " + std::to_string(c.unregistered) + " unregistered";
  }
  return out;
}

// Elements of each rank's input and output.
size_t input_elems(const Call &c, int ranks) {
  const bool blocks = c.kind == CollKind::kReduceScatter || c.kind == CollKind::kAlltoall;
  return c.kind == CollKind::kBarrier ? 0 : blocks ? c.count * ranks : c.count;
}
size_t output_elems(const Call &c, int ranks) {
  const bool blocks = c.kind == CollKind::kAllgather || c.kind == CollKind::kAlltoall;
  return c.kind == CollKind::kBarrier ? 0 : blocks ? c.count * ranks : c.count;
}

// One call's buffers on every rank and the output each must get.  In place as cohort.h says:
// one buffer, the input at rank * count of the output (allgather) or the output at
// rank * count of the input (reduce-scatter), else the same bytes.
class CallData {
 public:
  CallData(const Call &call, int ranks, uint64_t seed) : call_(call), ranks_(ranks) {
    const size_t elem = dtype_size(call.dtype);
    in_bytes_ = input_elems(call, ranks) * elem;
    out_bytes_ = output_elems(call, ranks) * elem;
    std::mt19937_64 rng(seed);
    for (int r = 0; r < ranks; ++r) {
      inputs_.emplace_back(in_bytes_);
      kernel_test::fill_inputs(call.dtype, rng, inputs_[r].data(), input_elems(call, ranks));
      buffers_.emplace_back(std::max(in_bytes_, out_bytes_), call.offset * elem);
      if (!call.in_place) outputs_.emplace_back(out_bytes_, call.offset * elem);
      if (in_bytes_ > 0) std::memcpy(src(r), inputs_[r].data(), in_bytes_);
    }
    for (int r = 0; r < ranks; ++r) expected_.push_back(expect(r));
  }

  CollArgs args(const EmulTeam &team, int rank) const {
    CollArgs a;
    a.team = team.device(rank);
    a.kind = call_.kind;
    a.algo = call_.algo;
    a.src = src(rank);
    a.dst = dst(rank);
    a.count = call_.count;
    a.dtype = call_.dtype;
    a.op = call_.op;
    a.root = call_.root;
    if (call_.algo == CollAlgo::kZeroCopy && rank != call_.unregistered) {
      a.src_ref = {buffer_slot_, 0, static_cast<uint64_t>(src(rank) - registered(buffers_, rank))};
      const bool own = call_.in_place;
      a.dst_ref = {own ? buffer_slot_ : output_slot_, 0,
                   static_cast<uint64_t>(dst(rank) - registered(own ? buffers_ : outputs_, rank))};
    }
    return a;
  }

  // kZeroCopy: every rank's buffers registered with `team` from their guards' start.
  void register_with(EmulTeam &team) {
    if (call_.algo != CollAlgo::kZeroCopy) return;
    auto slot_of = [&](const std::vector<GuardedBuffer> &buffers) {
      std::vector<char *> by_rank;
      for (int r = 0; r < ranks_; ++r) {
        by_rank.push_back(reinterpret_cast<char *>(registered(buffers, r)));
      }
      return team.register_buffers(by_rank);
    };
    buffer_slot_ = slot_of(buffers_);
    if (!call_.in_place) output_slot_ = slot_of(outputs_);
  }

  // The output (where this rank has one), the guards, an out-of-place input unchanged, and a
  // non-root's reduce output untouched.
  void check(int rank, const std::string &name, Tally *tally) const {
    const std::string at = name + " rank " + std::to_string(rank) + ": ";
    const bool written =
        call_.kind != CollKind::kBarrier && (call_.kind != CollKind::kReduce || rank == call_.root);
    if (written) {
      const std::string diff = compare_elements(call_.dtype, dst(rank), expected_[rank].data(),
                                                output_elems(call_, ranks_));
      if (!diff.empty()) tally->fail(at + diff);
    }
    if (std::string g = buffers_[rank].check_guards(); !g.empty()) tally->fail(at + "buffer " + g);
    if (call_.in_place) return;
    if (std::string g = outputs_[rank].check_guards(); !g.empty()) tally->fail(at + "output " + g);
    if (in_bytes_ > 0 && std::memcmp(src(rank), inputs_[rank].data(), in_bytes_) != 0) {
      tally->fail(at + "the input changed");
    }
    if (!written) {
      for (size_t i = 0; i < out_bytes_; ++i) {
        if (outputs_[rank].data()[i] != GuardedBuffer::kPoison) {
          tally->fail(at + "an output that is not this rank's was written");
          break;
        }
      }
    }
  }

 private:
  static unsigned char *registered(const std::vector<GuardedBuffer> &buffers, int r) {
    return buffers[r].data() - GuardedBuffer::kGuardBytes;
  }
  unsigned char *src(int r) const {
    const size_t elem = dtype_size(call_.dtype);
    const bool shifted = call_.in_place && call_.kind == CollKind::kAllgather;
    return buffers_[r].data() + (shifted ? r * call_.count * elem : 0);
  }
  unsigned char *dst(int r) const {
    if (!call_.in_place) return outputs_[r].data();
    const size_t elem = dtype_size(call_.dtype);
    const bool shifted = call_.kind == CollKind::kReduceScatter;
    return buffers_[r].data() + (shifted ? r * call_.count * elem : 0);
  }

  // Block `b` (count elements) of rank q's input.
  const unsigned char *block_of(int q, size_t b) const {
    return inputs_[q].data() + b * call_.count * dtype_size(call_.dtype);
  }

  std::vector<unsigned char> reduced(size_t b) const {
    std::vector<const void *> ins;
    for (int q = 0; q < ranks_; ++q) ins.push_back(block_of(q, b));
    std::vector<unsigned char> out(call_.count * dtype_size(call_.dtype));
    kernel_test::with_ref(call_.dtype, [&](auto ref) {
      kernel_test::reference<decltype(ref)>(out.data(), ins.data(), ranks_, call_.count, call_.op,
                                            ranks_);
    });
    return out;
  }

  std::vector<unsigned char> expect(int r) const {
    const size_t block = call_.count * dtype_size(call_.dtype);
    std::vector<unsigned char> out(out_bytes_);
    switch (call_.kind) {
      case CollKind::kBroadcast: std::memcpy(out.data(), block_of(call_.root, 0), block); break;
      case CollKind::kReduce:
      case CollKind::kAllreduce: out = reduced(0); break;
      case CollKind::kReduceScatter: out = reduced(static_cast<size_t>(r)); break;
      case CollKind::kAllgather:
        for (int q = 0; q < ranks_; ++q) std::memcpy(out.data() + q * block, block_of(q, 0), block);
        break;
      case CollKind::kAlltoall:
        for (int q = 0; q < ranks_; ++q) {
          std::memcpy(out.data() + q * block, block_of(q, static_cast<size_t>(r)), block);
        }
        break;
      case CollKind::kBarrier: break;
    }
    return out;
  }

  Call call_;
  int ranks_;
  size_t in_bytes_ = 0, out_bytes_ = 0;
  std::vector<std::vector<unsigned char>> inputs_;
  std::vector<GuardedBuffer> buffers_;  // the input (and in place the output)
  std::vector<GuardedBuffer> outputs_;  // out of place
  std::vector<std::vector<unsigned char>> expected_;
  int buffer_slot_ = -1, output_slot_ = -1;
};

// Launches `calls` in order on every rank, back to back, then checks every output and that
// every rank counted every call and saw no fault.
void run_calls(int ranks, int max_blocks, const std::vector<Call> &calls, uint64_t seed,
               Tally *tally) {
  EmulTeam team(ranks, max_blocks);
  std::vector<std::unique_ptr<CallData>> data;
  for (const Call &call : calls) {
    data.push_back(std::make_unique<CallData>(call, ranks, seed++));
    data.back()->register_with(team);
  }
  std::vector<std::vector<cudaError_t>> status(ranks, std::vector<cudaError_t>(calls.size()));
  team.run([&](int rank) {
    for (size_t i = 0; i < calls.size(); ++i) {
      status[rank][i] = kernels::launch_collective(data[i]->args(team, rank), nullptr);
    }
  });
  for (size_t i = 0; i < calls.size(); ++i) {
    tally->count_case();
    const std::string name = describe(calls[i], ranks);
    for (int r = 0; r < ranks; ++r) {
      if (status[r][i] != cudaSuccess) {
        tally->fail(name + " rank " + std::to_string(r) + ": " + cudaGetErrorString(status[r][i]));
        continue;
      }
      data[i]->check(r, name, tally);
    }
  }
  for (int r = 0; r < ranks; ++r) {
    const std::string at = "after " + std::to_string(calls.size()) + " calls at " +
                           std::to_string(ranks) + " ranks, rank " + std::to_string(r) + ": ";
    if (team.sequence(r) != calls.size()) {
      tally->fail(at + "sequence " + std::to_string(team.sequence(r)));
    }
    if (team.fault_claim(r) != 0 || team.stop_word(r) != 0) tally->fail(at + "a fault");
  }
}

constexpr CollKind kMoving[] = {CollKind::kBroadcast, CollKind::kAllgather, CollKind::kAlltoall};
constexpr CollKind kReducing[] = {CollKind::kReduce, CollKind::kReduceScatter};
constexpr CollAlgo kAlgos[] = {CollAlgo::kOneShot, CollAlgo::kPipelined};

// Every dtype x op of the reducing ones, a few dtypes of the others; small counts, both
// algorithms, roots and placements changing from call to call.
void small_calls(int ranks, const Options &options, Tally *tally) {
  std::vector<Call> calls;
  int i = 0;
  const std::vector<size_t> counts =
      options.full ? std::vector<size_t>{1, 7, 1023, 4097} : std::vector<size_t>{7};
  for (CollAlgo algo : kAlgos) {
    for (CollKind kind : kReducing) {
      for (int d = 0; d < kernels::kNumDTypes; ++d) {
        for (int o = 0; o < kernels::kNumRedOps; ++o, ++i) {
          const size_t count = counts[i % counts.size()];
          calls.push_back({kind, algo, static_cast<DType>(d), static_cast<RedOp>(o), count,
                           i % ranks, i % 3 == 0, static_cast<size_t>(i % 5 == 1)});
        }
      }
    }
    for (CollKind kind : kMoving) {
      for (DType dtype : {DType::kInt8, DType::kFloat16, DType::kFloat32, DType::kFloat64}) {
        for (size_t count : {size_t{1}, size_t{7}, size_t{1023}}) {
          ++i;
          calls.push_back({kind, algo, dtype, RedOp::kSum, count, i % ranks, i % 3 == 0,
                           static_cast<size_t>(i % 4 == 1)});
        }
      }
    }
  }
  calls.push_back({CollKind::kBarrier, CollAlgo::kOneShot, DType::kInt8, RedOp::kSum, 0, 0, false});
  run_calls(ranks, 4, calls, 1000 + ranks, tally);
}

// Pipelined calls long enough for several steps per block (and a partial last one), with one
// block and with two; 64 KB one-shot messages.
void larger_calls(int ranks, Tally *tally) {
  for (int blocks : {1, 2}) {
    const size_t fp32_steps = kernels::kChunkBytes / 4 * 5 / 2 * blocks + 3;  // 2.5 chunks
    std::vector<Call> calls = {
        {CollKind::kBroadcast, CollAlgo::kPipelined, DType::kFloat32, RedOp::kSum, fp32_steps,
         ranks - 1, false, 1},
        {CollKind::kReduce, CollAlgo::kPipelined, DType::kBfloat16, RedOp::kAvg, fp32_steps, 0,
         true},
        {CollKind::kAllgather, CollAlgo::kPipelined, DType::kInt8, RedOp::kSum,
         fp32_steps / static_cast<size_t>(ranks), 0, true},
        {CollKind::kReduceScatter, CollAlgo::kPipelined, DType::kFloat32, RedOp::kMax,
         fp32_steps / static_cast<size_t>(ranks), 0, false, 1},
        {CollKind::kAlltoall, CollAlgo::kPipelined, DType::kFloat64, RedOp::kSum,
         fp32_steps / static_cast<size_t>(ranks) / 2, 0, true},
        {CollKind::kReduceScatter, CollAlgo::kOneShot, DType::kInt32, RedOp::kSum,
         kernels::kOneShotBytes / 4, 0, true},
        {CollKind::kBroadcast, CollAlgo::kOneShot, DType::kFloat16, RedOp::kSum,
         kernels::kOneShotBytes / 2, 1 % ranks, false},
    };
    run_calls(ranks, blocks, calls, 2000 + ranks * 10 + blocks, tally);
  }
}

// Zero-copy broadcast, reduce, allgather, reduce-scatter and alltoall on registered buffers:
// several steps per block and a partial last one, in place and misaligned, every root, every
// dtype of the reductions once; one rank registering nothing (every rank then runs pipelined);
// back to back with one-shot calls (the descriptors' parities).
void zerocopy_calls(int ranks, Tally *tally) {
  for (int blocks : {1, 3}) {
    const size_t steps = kernels::kChunkBytes / 4 * 5 / 2 * blocks + 3;  // fp32: 2.5 chunks
    std::vector<Call> calls;
    int i = 0;
    for (CollKind kind : {CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllgather,
                          CollKind::kReduceScatter, CollKind::kAlltoall}) {
      for (bool in_place : {false, true}) {  // an alltoall in place runs pipelined
        for (size_t count : {size_t{1}, size_t{1023}, steps}) {
          ++i;
          calls.push_back({kind, CollAlgo::kZeroCopy, DType::kFloat32, RedOp::kSum, count,
                           i % ranks, in_place, static_cast<size_t>(i % 3),
                           i % 4 == 3 ? (i / 4) % ranks : -1});
          calls.push_back(
              {CollKind::kAllgather, CollAlgo::kOneShot, DType::kInt32, RedOp::kSum, 33, 0, false});
        }
      }
    }
    for (int d = 0; d < kernels::kNumDTypes; ++d, ++i) {
      for (CollKind kind : kReducing) {
        calls.push_back({kind, CollAlgo::kZeroCopy, static_cast<DType>(d),
                         static_cast<RedOp>(i % kernels::kNumRedOps), 4097, i % ranks, i % 2 == 0,
                         static_cast<size_t>(i % 2)});
      }
    }
    run_calls(ranks, blocks, calls, 5000 + ranks * 10 + blocks, tally);
  }
}

// Collectives of every kind, size and algorithm in a random order on one team, back to back
// (a fast rank starts the next while a slow one still reads the last): the one-shot parity
// and the end barrier must keep them apart.
void mixed_calls(int ranks, int n, uint64_t seed, Tally *tally) {
  std::mt19937_64 rng(seed);
  const size_t counts[] = {1, 7, 3000, 16384, 70000};
  const DType dtypes[] = {DType::kFloat32, DType::kBfloat16, DType::kInt8, DType::kFloat64};
  std::vector<Call> calls;
  for (int i = 0; i < n; ++i) {
    Call c{static_cast<CollKind>(rng() % 7),
           CollAlgo::kPipelined,
           dtypes[rng() % 4],
           static_cast<RedOp>(rng() % kernels::kNumRedOps),
           counts[rng() % 5],
           static_cast<int>(rng() % ranks),
           rng() % 3 == 0};
    if (c.kind == CollKind::kBarrier) c.count = 0;
    const size_t bytes = c.count * dtype_size(c.dtype);
    const bool zerocopy = c.kind != CollKind::kBarrier;
    if (c.kind == CollKind::kAllreduce && bytes <= kernels::kLlBytes && rng() % 2 == 0) {
      c.algo = CollAlgo::kLl;
    } else if (bytes <= kernels::kOneShotBytes && rng() % 2 == 0) {
      c.algo = CollAlgo::kOneShot;
    } else if (zerocopy && rng() % 2 == 0) {
      c.algo = CollAlgo::kZeroCopy;
      if (rng() % 4 == 0) c.unregistered = static_cast<int>(rng() % ranks);
    }
    calls.push_back(c);
  }
  run_calls(ranks, 3, calls, seed, tally);
}

// More ranks than reduce.h's kernels take inputs: the reducing collectives in one pass.
void many_ranks(int ranks, Tally *tally) {
  std::vector<Call> calls;
  for (CollAlgo algo : kAlgos) {
    for (CollKind kind : kReducing) {
      calls.push_back({kind, algo, DType::kFloat16, RedOp::kSum, 1023, 3, true});
      calls.push_back({kind, algo, DType::kBfloat16, RedOp::kAvg, 700, 8, false, 1});
      calls.push_back({kind, algo, DType::kInt32, RedOp::kProd, 33, 0, false});
    }
    calls.push_back({CollKind::kAlltoall, algo, DType::kInt8, RedOp::kSum, 100, 0, true});
  }
  run_calls(ranks, 2, calls, 3000 + ranks, tally);
}

// Rank 1 never makes the call: every other rank's kernel of every kind and algorithm ends at
// the timeout (its own, or a peer's that reached it first), names rank 1 as the one waited
// for, and every window holds a stop word.
void absent_rank(Tally *tally) {
  constexpr int kRanks = 3, kAbsent = 1;
  for (CollKind kind : {CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllgather,
                        CollKind::kReduceScatter, CollKind::kAlltoall, CollKind::kBarrier}) {
    for (CollAlgo algo : kAlgos) {
      tally->count_case();
      EmulTeam team(kRanks, 2, 300'000'000);
      const Call call{
          kind, algo, DType::kFloat32, RedOp::kSum, kind == CollKind::kBarrier ? size_t{0} : 3000,
          0,    false};
      const CallData data(call, kRanks, 77);
      std::vector<cudaError_t> status(kRanks, cudaSuccess);
      team.run(
          [&](int rank) {
            if (rank != kAbsent)
              status[rank] = kernels::launch_collective(data.args(team, rank), nullptr);
          },
          30);
      const std::string name = "absent rank: " + describe(call, kRanks);
      for (int r = 0; r < kRanks; ++r) {
        const std::string at = name + " rank " + std::to_string(r) + ": ";
        if (team.stop_word(r) == 0) tally->fail(at + "no stop word in its window");
        if (r == kAbsent) continue;
        const kernels::DeviceFault f = team.fault(r);
        const bool stopped =
            f.reason == kernels::kStopTimeout || f.reason == kernels::kStopPeerTimeout;
        if (status[r] != cudaSuccess || !stopped || f.peer != kAbsent) {
          tally->fail(at + "fault reason " + std::to_string(f.reason) + " peer " +
                      std::to_string(f.peer) + ", want a timeout waiting for rank 1");
        }
      }
    }
  }
}

// Arguments outside launch_collective's contract launch nothing.
void invalid_arguments(Tally *tally) {
  EmulTeam team(3);
  GuardedBuffer buffer(3 * kernels::kOneShotBytes + 64, 0);
  CollArgs good;
  good.team = team.device(0);
  good.kind = CollKind::kBroadcast;
  good.src = good.dst = buffer.data();
  good.count = 16;
  auto expect_invalid = [&](const char *what, CollArgs a) {
    tally->count_case();
    const cudaError_t err = kernels::launch_collective(a, nullptr);
    if (err != cudaErrorInvalidValue) {
      tally->fail(std::string("collective arguments: ") + what + ": " + cudaGetErrorName(err));
    }
  };
  CollArgs a = good;
  a.count = 0;
  expect_invalid("count 0", a);
  a = good;
  a.root = 3;
  expect_invalid("root 3 of 3", a);
  a = good;
  a.kind = CollKind::kReduce;
  a.root = -1;
  expect_invalid("reduce root -1", a);
  a = good;
  a.kind = static_cast<CollKind>(99);
  expect_invalid("kind 99", a);
  a = good;
  a.kind = CollKind::kReduceScatter;
  a.op = static_cast<RedOp>(kernels::kNumRedOps);
  expect_invalid("op 5", a);
  a = good;
  a.kind = CollKind::kAllgather;
  a.algo = CollAlgo::kOneShot;
  a.count = kernels::kOneShotBytes / 4 + 1;
  expect_invalid("one-shot allgather over kOneShotBytes", a);
  a = good;
  a.algo = CollAlgo::kLl;
  expect_invalid("LL broadcast (allreduce only)", a);
  a = good;
  a.algo = static_cast<CollAlgo>(7);
  expect_invalid("algorithm 7", a);
  if (team.sequence(0) != 0) tally->fail("collective arguments: a call was counted");
}

}  // namespace

void run_collective_cases(const Options &options, Tally *tally) {
  invalid_arguments(tally);
  absent_rank(tally);
  for (int ranks : {1, 2, 3, 4}) small_calls(ranks, options, tally);
  for (int ranks : {2, 3}) larger_calls(ranks, tally);
  if (options.full) larger_calls(4, tally);
  for (int ranks : {2, 3, 4}) zerocopy_calls(ranks, tally);
  mixed_calls(3, 40, 7, tally);
  mixed_calls(4, options.full ? 120 : 40, 8, tally);
  // Ranks drifting apart: a rank steps ahead of a slow peer and must wait where the windows
  // say so (the refill of an inbox half, the next call's writes).
  cohort_emul::BlockRun::set_jitter(20);
  for (int ranks : {2, 3}) larger_calls(ranks, tally);
  mixed_calls(3, 30, 9, tally);
  cohort_emul::BlockRun::set_jitter(0);
  many_ranks(9, tally);
  if (options.full) many_ranks(kernels::kMaxLocalRanks, tally);
}

}  // namespace cohort::team_test
