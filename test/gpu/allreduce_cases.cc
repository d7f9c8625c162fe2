// team_emul_test's allreduce cases: launch_allreduce on every rank of an EmulTeam, each
// output compared bit for bit with the host reference.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emul/team.h"
#include "kernels/allreduce.h"
#include "reduce_reference.h"
#include "team_test.h"

namespace cohort::team_test {
namespace {

using cohort_emul::EmulTeam;
using kernels::AllreduceAlgo;
using kernels::AllreduceArgs;
using kernels::DType;
using kernels::dtype_size;
using kernels::RedOp;

constexpr AllreduceAlgo kAlgos[] = {AllreduceAlgo::kOneShot, AllreduceAlgo::kTwoShot,
                                    AllreduceAlgo::kZeroCopy, AllreduceAlgo::kLl};

// The largest message of `algo` in bytes per rank (SIZE_MAX: any).
size_t most_bytes(AllreduceAlgo algo) {
  switch (algo) {
    case AllreduceAlgo::kOneShot: return kernels::kOneShotBytes;
    case AllreduceAlgo::kLl: return kernels::kLlBytes;
    default: return SIZE_MAX;
  }
}

const char *algo_name(AllreduceAlgo algo) {
  switch (algo) {
    case AllreduceAlgo::kOneShot: return "oneshot";
    case AllreduceAlgo::kTwoShot: return "twoshot";
    case AllreduceAlgo::kLl: return "ll";
    default: return "zerocopy";
  }
}

struct Call {
  AllreduceAlgo algo;
  DType dtype;
  RedOp op;
  size_t count;
  bool in_place;
  size_t offset = 0;  // elements past cudaMalloc's alignment
  // kZeroCopy: the rank whose buffers are not registered (every rank then runs two-shot); -1:
  // every rank's are.
  int unregistered = -1;
};

std::string describe(const Call &c, int ranks) {
  char text[160];
  std::snprintf(text, sizeof text, "allreduce ranks=%d %s %s %s count=%zu %s offset=%zu", ranks,
                algo_name(c.algo), kernel_test::kDtypeNames[static_cast<int>(c.dtype)],
                kernel_test::kOpNames[static_cast<int>(c.op)], c.count,
                c.in_place ? "in-place" : "out-of-place", c.offset);
  std::string out = text;
  if (c.algo == AllreduceAlgo::kZeroCopy && c.unregistered >= 0) {
    out += " rank " + std::to_string(c.unregistered) + " unregistered";
  }
  return out;
}

// One call's buffers on every rank, and the result every rank must get: the reference's
// (every input accumulated in the compute type, fp32 for fp16/bf16, rounded once, whatever
// the rank count).
class CallData {
 public:
  CallData(const Call &call, int ranks, uint64_t seed) : call_(call) {
    const size_t bytes = call.count * dtype_size(call.dtype);
    const size_t offset = call.offset * dtype_size(call.dtype);
    std::mt19937_64 rng(seed);
    std::vector<const void *> ins;
    for (int r = 0; r < ranks; ++r) {
      inputs_.emplace_back(bytes);
      kernel_test::fill_inputs(call.dtype, rng, inputs_[r].data(), call.count);
      src_.emplace_back(bytes, offset);
      std::memcpy(src_[r].data(), inputs_[r].data(), bytes);
      if (!call.in_place) dst_.emplace_back(bytes, offset);
      ins.push_back(inputs_[r].data());
    }
    expected_.resize(bytes);
    kernel_test::with_ref(call.dtype, [&](auto ref) {
      kernel_test::reference<decltype(ref)>(expected_.data(), ins.data(), ranks, call.count,
                                            call.op, ranks);
    });
  }

  AllreduceArgs args(const EmulTeam &team, int rank) const {
    AllreduceArgs a;
    a.team = team.device(rank);
    a.src = src_[rank].data();
    a.dst = call_.in_place ? src_[rank].data() : dst_[rank].data();
    a.count = call_.count;
    a.dtype = call_.dtype;
    a.op = call_.op;
    a.algo = call_.algo;
    if (call_.algo == AllreduceAlgo::kZeroCopy && rank != call_.unregistered) {
      a.src_ref = {src_slot_, 0, GuardedBuffer::kGuardBytes};
      a.dst_ref = {call_.in_place ? src_slot_ : dst_slot_, 0, GuardedBuffer::kGuardBytes};
    }
    return a;
  }

  // kZeroCopy: every rank's buffers registered with `team`, each from its guard's start (the
  // calls then reach them at an offset).
  void register_with(EmulTeam &team) {
    if (call_.algo != AllreduceAlgo::kZeroCopy) return;
    auto slot_of = [&](std::vector<GuardedBuffer> &buffers) {
      std::vector<char *> by_rank;
      for (GuardedBuffer &b : buffers) {
        by_rank.push_back(reinterpret_cast<char *>(b.data()) - GuardedBuffer::kGuardBytes);
      }
      return team.register_buffers(by_rank);
    };
    src_slot_ = slot_of(src_);
    if (!call_.in_place) dst_slot_ = slot_of(dst_);
  }

  // The output, the guards, and the input of an out-of-place call (which must stay as it was).
  void check(int rank, const std::string &name, Tally *tally) const {
    const std::string at = name + " rank " + std::to_string(rank) + ": ";
    const GuardedBuffer &out = call_.in_place ? src_[rank] : dst_[rank];
    std::string diff = compare_elements(call_.dtype, out.data(), expected_.data(), call_.count);
    if (!diff.empty()) tally->fail(at + diff);
    if (std::string g = out.check_guards(); !g.empty()) tally->fail(at + "output " + g);
    if (call_.in_place) return;
    if (std::string g = src_[rank].check_guards(); !g.empty()) tally->fail(at + "input " + g);
    if (std::memcmp(src_[rank].data(), inputs_[rank].data(), inputs_[rank].size()) != 0) {
      tally->fail(at + "the input changed");
    }
  }

 private:
  Call call_;
  std::vector<std::vector<unsigned char>> inputs_;
  std::vector<GuardedBuffer> src_;
  std::vector<GuardedBuffer> dst_;  // empty in place
  std::vector<unsigned char> expected_;
  int src_slot_ = -1;
  int dst_slot_ = -1;
};

// A team and the calls it ran: its call counter must follow them.
struct TeamUnderTest {
  TeamUnderTest(int ranks, int max_blocks) : team(ranks, max_blocks) {}
  EmulTeam team;
  uint64_t calls = 0;
  uint64_t seed = 1;
};

// After calls that all succeeded: every rank counted them and nothing stopped the team.
void check_team_state(const TeamUnderTest &t, const std::string &name, Tally *tally) {
  for (int r = 0; r < t.team.size(); ++r) {
    const std::string at = name + " rank " + std::to_string(r) + ": ";
    if (t.team.sequence(r) != t.calls) {
      tally->fail(at + "sequence " + std::to_string(t.team.sequence(r)) + ", want " +
                  std::to_string(t.calls));
    }
    if (t.team.blocks_done(r) != 0) tally->fail(at + "blocks_done not reset");
    if (t.team.fault_claim(r) != 0 || t.team.fault(r).reason != kernels::kStopNone) {
      tally->fail(at + "a fault was reported (reason " + std::to_string(t.team.fault(r).reason) +
                  ")");
    }
    if (t.team.stop_word(r) != 0) tally->fail(at + "a stop word was written");
  }
}

// Launches `calls` in order on every rank, back to back as a stream runs them (a fast rank
// starts the next call while a slow one finishes the last), then checks every output.
void run_calls(TeamUnderTest *t, const std::vector<Call> &calls, Tally *tally) {
  const int ranks = t->team.size();
  std::vector<std::unique_ptr<CallData>> data;
  for (const Call &call : calls) {
    data.push_back(std::make_unique<CallData>(call, ranks, t->seed++));
    data.back()->register_with(t->team);
  }
  std::vector<std::vector<cudaError_t>> status(ranks, std::vector<cudaError_t>(calls.size()));
  t->team.run([&](int rank) {
    for (size_t i = 0; i < calls.size(); ++i) {
      status[rank][i] = kernels::launch_allreduce(data[i]->args(t->team, rank), nullptr);
    }
  });
  t->calls += calls.size();
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
  check_team_state(
      *t, describe(calls.back(), ranks) + " (last of " + std::to_string(calls.size()) + " calls)",
      tally);
}

// Elements of one pipeline step of two-shot (allreduce.cu): a slice per rank.
size_t step_elems(int ranks, DType dtype) {
  const size_t slice_bytes = kernels::kChunkBytes / ranks / 16 * 16;
  return slice_bytes / dtype_size(dtype) * ranks;
}

// Every dtype x op, both algorithms, small counts; in place and offsets alternate.  One run
// per dtype x op: its calls go back to back.
void every_dtype_and_op(int ranks, const Options &options, Tally *tally) {
  TeamUnderTest t(ranks, 4);
  std::vector<size_t> counts = {1, 7, 1023};
  if (options.full) counts.insert(counts.end(), {4097, 65537});
  int index = 0;
  for (int d = 0; d < kernels::kNumDTypes; ++d) {
    for (int o = 0; o < kernels::kNumRedOps; ++o) {
      std::vector<Call> calls;
      for (AllreduceAlgo algo : kAlgos) {
        for (size_t count : counts) {
          const DType dtype = static_cast<DType>(d);
          if (count * dtype_size(dtype) > most_bytes(algo)) continue;
          ++index;
          calls.push_back({algo, dtype, static_cast<RedOp>(o), count, index % 2 == 1,
                           static_cast<size_t>(index / 2 % 2)});
        }
      }
      run_calls(&t, calls, tally);
    }
  }
}

// Larger messages: several blocks, the largest one-shot message, misaligned.
void larger_counts(int ranks, Tally *tally) {
  TeamUnderTest t(ranks, 4);
  const size_t most_fp32 = kernels::kOneShotBytes / 4;
  run_calls(&t,
            {{AllreduceAlgo::kTwoShot, DType::kFloat32, RedOp::kSum, 65537, false, 1},
             {AllreduceAlgo::kTwoShot, DType::kBfloat16, RedOp::kAvg, 65537, true, 0},
             {AllreduceAlgo::kTwoShot, DType::kInt8, RedOp::kMax, 65537, false, 0},
             {AllreduceAlgo::kOneShot, DType::kFloat32, RedOp::kSum, most_fp32, false, 0},
             {AllreduceAlgo::kOneShot, DType::kFloat16, RedOp::kMin, 2 * most_fp32 - 1, true, 1},
             {AllreduceAlgo::kOneShot, DType::kInt64, RedOp::kProd, 4099, false, 1}},
            tally);
}

// LL calls: the largest message (several blocks, and more lines than the blocks' threads on
// a team of one block), partial last lines, misaligned, in place; back to back with each
// other (the same parity every second call, its lines taken and zeroed in between) and with
// one-shot and two-shot calls.
void ll_calls(int ranks, Tally *tally) {
  for (int blocks : {1, 4}) {
    TeamUnderTest t(ranks, blocks);
    const size_t most_fp32 = kernels::kLlBytes / 4;
    std::vector<Call> calls = {
        {AllreduceAlgo::kLl, DType::kFloat32, RedOp::kSum, most_fp32, false, 0},
        {AllreduceAlgo::kLl, DType::kFloat32, RedOp::kSum, 2, false, 0},
        {AllreduceAlgo::kLl, DType::kInt8, RedOp::kSum, 13, true, 3},
        {AllreduceAlgo::kLl, DType::kFloat16, RedOp::kAvg, most_fp32 * 2 - 1, false, 1},
        {AllreduceAlgo::kOneShot, DType::kInt32, RedOp::kMax, 1000, false, 0},
        {AllreduceAlgo::kLl, DType::kFloat64, RedOp::kMin, 3, false, 1},
        {AllreduceAlgo::kTwoShot, DType::kFloat32, RedOp::kSum, 70000, true, 0},
        {AllreduceAlgo::kLl, DType::kBfloat16, RedOp::kSum, 4097, true, 1},
        {AllreduceAlgo::kLl, DType::kUint64, RedOp::kProd, most_fp32 / 2, false, 0}};
    for (int i = 0; i < 8; ++i) {
      calls.push_back(
          {AllreduceAlgo::kLl, DType::kInt32, RedOp::kSum, 1u + i * 97u, i % 2 == 1, 0});
    }
    run_calls(&t, calls, tally);
  }
}

// Two-shot messages that take every block through several pipeline steps (and a last,
// partial one), with one block and with several.
void pipeline_steps(Tally *tally) {
  for (int blocks : {1, 2}) {
    TeamUnderTest t(3, blocks);
    auto steps = [&](DType dtype, double per_block) {
      return static_cast<size_t>(step_elems(3, dtype) * per_block * blocks) + 3;
    };
    run_calls(
        &t,
        {{AllreduceAlgo::kTwoShot, DType::kFloat32, RedOp::kSum, steps(DType::kFloat32, 2.5), false,
          1},
         {AllreduceAlgo::kTwoShot, DType::kFloat16, RedOp::kAvg, steps(DType::kFloat16, 3.2), true,
          0},
         {AllreduceAlgo::kTwoShot, DType::kInt8, RedOp::kMin, steps(DType::kInt8, 2.0), false, 0}},
        tally);
  }
}

// Direct calls on registered buffers: several steps per block and a partial last one, in
// place and misaligned, back to back with one-shot calls (the descriptors' parities) and with
// calls where one rank's buffers are not registered (every rank then runs two-shot).
void zerocopy_calls(int ranks, Tally *tally) {
  for (int blocks : {1, 3}) {
    TeamUnderTest t(ranks, blocks);
    const size_t step = kernels::kChunkBytes / 4;  // fp32 elements of one block's step
    const size_t several = step * ranks * blocks * 2 + 5;
    run_calls(
        &t,
        {{AllreduceAlgo::kZeroCopy, DType::kFloat32, RedOp::kSum, several, false, 1},
         {AllreduceAlgo::kZeroCopy, DType::kFloat32, RedOp::kSum, several, true, 0},
         {AllreduceAlgo::kOneShot, DType::kInt32, RedOp::kMax, 1000, false, 0},
         {AllreduceAlgo::kZeroCopy, DType::kBfloat16, RedOp::kAvg, 3 * step + 1, false, 3},
         {AllreduceAlgo::kZeroCopy, DType::kInt8, RedOp::kMin, 7, true, 1},
         {AllreduceAlgo::kZeroCopy, DType::kFloat16, RedOp::kSum, step + 3, false, 0, ranks - 1},
         {AllreduceAlgo::kZeroCopy, DType::kFloat64, RedOp::kProd, 1023, true, 1, 0},
         {AllreduceAlgo::kZeroCopy, DType::kUint64, RedOp::kMax, several / 2, false, 0}},
        tally);
  }
}

// More ranks than reduce.h's kernels take inputs (kMaxReduceInputs): one pass over all of
// them, in place and out of place.
void many_ranks(int ranks, Tally *tally) {
  TeamUnderTest t(ranks, 2);
  const struct {
    DType dtype;
    RedOp op;
  } kinds[] = {{DType::kFloat32, RedOp::kSum}, {DType::kInt32, RedOp::kProd},
               {DType::kInt8, RedOp::kMin},    {DType::kFloat64, RedOp::kMax},
               {DType::kFloat16, RedOp::kSum}, {DType::kBfloat16, RedOp::kAvg}};
  for (const auto &kind : kinds) {
    std::vector<Call> calls;
    for (AllreduceAlgo algo : kAlgos) {
      for (bool in_place : {false, true}) {
        calls.push_back({algo, kind.dtype, kind.op, 1023, in_place, in_place ? 0u : 1u});
        if (5000 * dtype_size(kind.dtype) <= most_bytes(algo)) {
          calls.push_back({algo, kind.dtype, kind.op, 5000, in_place, 0});
        }
      }
    }
    run_calls(&t, calls, tally);
  }
}

// Arguments outside launch_allreduce's contract launch nothing.
void invalid_arguments(Tally *tally) {
  EmulTeam team(2);
  GuardedBuffer buffer(kernels::kOneShotBytes + 16, 0);
  AllreduceArgs good;
  good.team = team.device(0);
  good.src = good.dst = buffer.data();
  good.count = 16;
  auto expect_invalid = [&](const char *what, AllreduceArgs args) {
    tally->count_case();
    const cudaError_t err = kernels::launch_allreduce(args, nullptr);
    if (err != cudaErrorInvalidValue) {
      tally->fail(std::string("allreduce arguments: ") + what + ": " + cudaGetErrorName(err));
    }
  };
  AllreduceArgs a = good;
  a.count = 0;
  expect_invalid("count 0", a);
  a = good;
  a.algo = AllreduceAlgo::kOneShot;
  a.count = kernels::kOneShotBytes / 4 + 1;
  expect_invalid("one-shot over kOneShotBytes", a);
  a = good;
  a.dtype = static_cast<DType>(kernels::kNumDTypes);
  expect_invalid("dtype 10", a);
  a = good;
  a.op = static_cast<RedOp>(-1);
  expect_invalid("op -1", a);
  a = good;
  a.team.size = kernels::kMaxLocalRanks + 1;
  expect_invalid("17 ranks", a);
  a = good;
  a.team.size = 0;
  expect_invalid("0 ranks", a);
  a = good;
  a.algo = AllreduceAlgo::kZeroCopy;
  expect_invalid("zero-copy on a team that registered nothing", a);
  a = good;
  a.algo = AllreduceAlgo::kLl;
  a.count = kernels::kLlBytes / 4 + 1;
  expect_invalid("LL over kLlBytes", a);
  if (team.sequence(0) != 0) tally->fail("allreduce arguments: a call was counted");
}

}  // namespace

void run_allreduce_cases(const Options &options, Tally *tally) {
  invalid_arguments(tally);
  for (int ranks : {1, 2, 3, 4}) every_dtype_and_op(ranks, options, tally);
  if (options.full) {
    for (int ranks : {5, 6, 7, 8}) every_dtype_and_op(ranks, options, tally);
  }
  for (int ranks : {2, 3, 4}) larger_counts(ranks, tally);
  pipeline_steps(tally);
  for (int ranks : {2, 3, 4}) zerocopy_calls(ranks, tally);
  for (int ranks : {2, 3, 5}) ll_calls(ranks, tally);
  many_ranks(9, tally);
  if (options.full) {
    for (int ranks : {12, kernels::kMaxLocalRanks}) many_ranks(ranks, tally);
  }
}

}  // namespace cohort::team_test
