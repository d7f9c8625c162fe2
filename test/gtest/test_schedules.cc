// Every algorithm's schedule, run by a simulator of n ranks that delivers messages in order
// per pair of ranks (as real executors do, without lockstep), checked against results
// computed directly.  Catches wrong chunk math, mismatched sends and receives, deadlocks and
// spans that a step both sends and overwrites.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <random>

#include "coll/multi_channel.h"
#include "coll/schedule.h"
#include "coll/steps.h"
#include "schedule_sim.h"

namespace cohort::coll {
namespace {

struct Case {
  Collective collective;
  const char *algorithm;
  int n;
  size_t count;
  cohort_op_t op;
  int root;
  bool in_place;
  size_t elem_size;  // only sizes pipeline pieces: large values mean many pieces
  int channels = 1;  // > 1: the algorithm on that many rings (each its own order), in parts
};

std::string describe(const Case &c) {
  return std::string(collective_name(c.collective)) + "/" + c.algorithm +
         " n=" + std::to_string(c.n) + " count=" + std::to_string(c.count) +
         " op=" + std::to_string(c.op) + " root=" + std::to_string(c.root) +
         (c.in_place ? " in-place" : "") + " elem=" + std::to_string(c.elem_size) +
         " channels=" + std::to_string(c.channels);
}

// Input and output sizes per rank, in elements.
size_t in_size(const Case &c) {
  switch (c.collective) {
    case Collective::kReduceScatter:
    case Collective::kScatter:  // the root's; the others' is left unread
    case Collective::kAlltoall: return c.count * c.n;
    default: return c.count;
  }
}
size_t out_size(const Case &c) {
  switch (c.collective) {
    case Collective::kAllgather:
    case Collective::kGather:  // the root's; the others' is left unwritten
    case Collective::kAlltoall: return c.count * c.n;
    default: return c.count;
  }
}

// Gather and scatter are in place on the root only (the others have one buffer).
bool in_place_on(const Case &c, int r) {
  const bool rooted_blocks =
      c.collective == Collective::kGather || c.collective == Collective::kScatter;
  return c.in_place && (!rooted_blocks || r == c.root);
}

void run_case(const Case &c, std::mt19937 &rng) {
  SCOPED_TRACE(describe(c));
  const int n = c.n;
  // The plan's rings: any order of the ranks each, and each rank's place in them.
  std::vector<std::vector<int>> rings(c.channels, std::vector<int>(n)), positions = rings;
  for (int k = 0; k < c.channels; ++k) {
    std::iota(rings[k].begin(), rings[k].end(), 0);
    std::shuffle(rings[k].begin(), rings[k].end(), rng);
    for (int i = 0; i < n; ++i) positions[k][rings[k][i]] = i;
  }
  // Hosts for hierarchical algorithms: a random number of them, ranks spread at random.
  std::vector<int> node_of_rank(n);
  const int hosts = std::uniform_int_distribution<int>(1, n)(rng);
  for (int r = 0; r < n; ++r) node_of_rank[r] = r < hosts ? r : static_cast<int>(rng() % hosts);
  std::uniform_int_distribution<Value> value(c.op == COHORT_PROD ? -3 : -1000,
                                             c.op == COHORT_PROD ? 3 : 1000);
  std::vector<std::vector<Value>> inputs(n), buffers(n), outputs(n);
  for (int r = 0; r < n; ++r) {
    inputs[r].resize(in_size(c));
    for (Value &v : inputs[r]) v = value(rng);
  }
  Simulator sim(n, c.op);
  for (int r = 0; r < n; ++r) {
    SimRank &me = sim.rank(r);
    outputs[r].assign(out_size(c), -7777);
    buffers[r] = inputs[r];
    me.src = &buffers[r];
    me.dst = &outputs[r];
    if (in_place_on(c, r)) {
      switch (c.collective) {
        case Collective::kGather:     // the root's block already in its slot of the output
        case Collective::kAllgather:  // own block already in its slot of the output
          std::copy(inputs[r].begin(), inputs[r].end(), outputs[r].begin() + r * c.count);
          me.src = &outputs[r];
          me.src_base = r * c.count;
          break;
        case Collective::kScatter:        // output = the root's block of the input
        case Collective::kReduceScatter:  // output = the rank's block of the input
          me.dst = &buffers[r];
          me.dst_base = r * c.count;
          break;
        default: me.dst = &buffers[r];
      }
    }
    CollArgs args;
    args.collective = c.collective;
    args.count = c.count;
    args.op = c.op;
    args.root = c.root;
    args.in_place = in_place_on(c, r);
    args.rank = r;
    args.size = n;
    args.elem_size = c.elem_size;
    args.ring = &rings[0];
    args.rings = &rings;
    args.ring_positions = &positions;
    args.node_of_rank = &node_of_rank;
    const AlgorithmInfo *info = find_algorithm(c.collective, c.algorithm);
    ASSERT_NE(info, nullptr);
    me.algorithm = make_multi_channel(*info, args, c.channels);
  }
  ASSERT_TRUE(sim.run());
  auto reduced = [&](size_t offset, size_t i) {
    Value acc = inputs[0][offset + i];
    for (int q = 1; q < n; ++q) acc = apply(c.op, acc, inputs[q][offset + i]);
    return c.op == COHORT_AVG ? acc / n : acc;
  };
  auto prefix = [&](int last, size_t i) {  // ranks 0..last
    Value acc = inputs[0][i];
    for (int q = 1; q <= last; ++q) acc = apply(c.op, acc, inputs[q][i]);
    return acc;
  };
  for (int r = 0; r < n; ++r) {
    const SimRank &me = sim.rank(r);
    if (c.collective == Collective::kBarrier) {  // nobody leaves before everyone arrived
      ASSERT_EQ(std::count(me.heard.begin(), me.heard.end(), true), n) << "rank " << r;
    }
    const Value *out = me.dst->data() + me.dst_base;
    for (size_t i = 0; i < c.count; ++i) {
      switch (c.collective) {
        case Collective::kAllreduce:
          ASSERT_EQ(out[i], reduced(0, i)) << "rank " << r << " i " << i;
          break;
        case Collective::kReduce:
          if (r == c.root) {
            ASSERT_EQ(out[i], reduced(0, i)) << "i " << i;
          }
          break;
        case Collective::kBroadcast: ASSERT_EQ(out[i], inputs[c.root][i]) << "rank " << r; break;
        case Collective::kReduceScatter:
          ASSERT_EQ(out[i], reduced(r * c.count, i)) << "rank " << r;
          break;
        case Collective::kAllgather:
          for (int q = 0; q < n; ++q) ASSERT_EQ(out[q * c.count + i], inputs[q][i]) << "rank " << r;
          break;
        case Collective::kAlltoall:
          for (int q = 0; q < n; ++q) ASSERT_EQ(out[q * c.count + i], inputs[q][r * c.count + i]);
          break;
        case Collective::kGather:
          if (r == c.root) {
            for (int q = 0; q < n; ++q) ASSERT_EQ(out[q * c.count + i], inputs[q][i]) << "q " << q;
          }
          break;
        case Collective::kScatter:
          ASSERT_EQ(out[i], inputs[c.root][r * c.count + i]) << "rank " << r;
          break;
        case Collective::kScan: ASSERT_EQ(out[i], prefix(r, i)) << "rank " << r; break;
        case Collective::kExscan:  // rank 0's output keeps what it held
          ASSERT_EQ(out[i], r > 0        ? prefix(r - 1, i)
                            : c.in_place ? inputs[0][i]
                                         : -7777)
              << "rank " << r;
          break;
        default: break;
      }
    }
    const bool root_output =
        c.collective == Collective::kReduce || c.collective == Collective::kGather;
    if (root_output && r != c.root && !in_place_on(c, r)) {
      for (Value v : outputs[r]) ASSERT_EQ(v, -7777) << "non-root output written";
    }
    if (!in_place_on(c, r)) {
      ASSERT_EQ(buffers[r], inputs[r]) << "input modified on rank " << r;
    }
  }
}

const int kRanks[] = {1, 2, 3, 4, 5, 7, 8, 16};
const size_t kCounts[] = {0, 1, 7, 1023};

}  // namespace

TEST(Schedules, EveryAlgorithmIsRegisteredOnce) {
  std::map<std::pair<int, std::string>, int> seen;
  for (const AlgorithmInfo &info : algorithm_table()) {
    std::pair<int, std::string> key(static_cast<int>(info.collective), info.name);
    EXPECT_EQ(++seen[key], 1) << info.name;
    EXPECT_NE(std::string(info.description), "");
  }
  for (int c = 0; c < static_cast<int>(Collective::kCount); ++c) {
    bool any = false;
    for (const AlgorithmInfo &info : algorithm_table())
      any |= static_cast<int>(info.collective) == c;
    EXPECT_TRUE(any) << collective_name(static_cast<Collective>(c)) << " has no algorithm";
  }
}

TEST(Schedules, ReductionsMatchTheReference) {
  std::mt19937 rng(1234);
  const std::pair<Collective, const char *> algorithms[] = {{Collective::kAllreduce, "ring"},
                                                            {Collective::kAllreduce, "direct"},
                                                            {Collective::kAllreduce, "hier"},
                                                            {Collective::kReduceScatter, "ring"},
                                                            {Collective::kReduce, "chain"}};
  for (auto [collective, name] : algorithms) {
    for (int n : kRanks) {
      for (size_t count : kCounts) {
        for (cohort_op_t op : {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG}) {
          for (bool in_place : {false, true}) {
            int root = collective == Collective::kReduce ? (n > 2 ? n - 2 : 0) : 0;
            run_case({collective, name, n, count, op, root, in_place, 4096}, rng);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// Prefix reductions in rank order, whatever the ring's order; no AVG (refused at the API).
TEST(Schedules, ScansMatchTheReference) {
  std::mt19937 rng(4321);
  for (Collective collective : {Collective::kScan, Collective::kExscan}) {
    for (int n : kRanks) {
      for (size_t count : kCounts) {
        for (cohort_op_t op : {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX}) {
          for (bool in_place : {false, true}) {
            run_case({collective, "chain", n, count, op, 0, in_place, 4096}, rng);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(Schedules, DataMovementMatchesTheReference) {
  std::mt19937 rng(99);
  const std::pair<Collective, const char *> algorithms[] = {
      {Collective::kAllgather, "ring"},    {Collective::kBroadcast, "chain"},
      {Collective::kAlltoall, "pairwise"}, {Collective::kBarrier, "dissemination"},
      {Collective::kGather, "direct"},     {Collective::kScatter, "direct"}};
  for (auto [collective, name] : algorithms) {
    for (int n : kRanks) {
      for (size_t count : kCounts) {
        for (bool in_place : {false, true}) {
          for (int root : {0, n - 1, n / 2}) {
            run_case({collective, name, n, count, COHORT_SUM, root, in_place, 4096}, rng);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// On several channels each part runs on its own ring; the parts' messages between a pair of
// ranks share one stream, in the same order on both sides.
TEST(Schedules, SplittableAlgorithmsRunOnSeveralChannels) {
  std::mt19937 rng(2024);
  for (const AlgorithmInfo &info : algorithm_table()) {
    if (!info.splits) continue;
    for (int n : {1, 2, 3, 5, 8}) {
      for (int channels : {2, 3, 4}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{1023}}) {
          const int root = info.collective == Collective::kAllreduce ? 0 : n - 1;
          for (cohort_op_t op : {COHORT_SUM, COHORT_AVG}) {
            run_case({info.collective, info.name, n, count, op, root, count % 2 == 1, 64, channels},
                     rng);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// A chain's pieces: one where nothing overlaps (two ranks), about sqrt((n - 2) bytes / step
// cost) otherwise, never smaller than kPieceBytes nor fewer than one.
TEST(Schedules, ChainPiecesGrowWithTheChainAndTheBytes) {
  const size_t mib = 1 << 20;
  EXPECT_EQ(chain_pieces(0, 4, 8), 0u);
  EXPECT_EQ(chain_pieces(1, 4, 8), 1u);
  EXPECT_EQ(chain_pieces(64 * mib / 4, 4, 2), 1u);   // two ranks: one piece, one step
  EXPECT_EQ(chain_pieces(64 * mib, 1, 3), 23u);      // sqrt(512) rounded
  EXPECT_EQ(chain_pieces(64 * mib / 8, 8, 8), 55u);  // sqrt(6 x 512)
  EXPECT_EQ(chain_pieces(mib / 4, 4, 8), 4u);        // no piece below 256 KiB
  EXPECT_EQ(chain_pieces(mib, 1, 1000), 4u);
  EXPECT_EQ(chain_pieces(3 * kPieceBytes / 2, 1, 64), 2u);  // a last piece of half
  size_t last = 0;
  for (int n = 3; n <= 64; ++n) {  // longer chains: as many pieces or more
    const size_t pieces = chain_pieces(256 * mib, 1, n);
    EXPECT_GE(pieces, last) << n;
    last = pieces;
  }
}

// A prime count that no rank count divides, with pieces of the real size.
TEST(Schedules, LargeUnevenCounts) {
  std::mt19937 rng(7);
  for (int n : {2, 3, 7}) {
    run_case({Collective::kAllreduce, "ring", n, 65537, COHORT_SUM, 0, false, 8}, rng);
    run_case({Collective::kReduce, "chain", n, 65537, COHORT_MAX, 1, true, 8}, rng);
    run_case({Collective::kBroadcast, "chain", n, 65537, COHORT_SUM, n - 1, false, 8}, rng);
    run_case({Collective::kGather, "direct", n, 65537, COHORT_SUM, 1, true, 8}, rng);
    run_case({Collective::kScatter, "direct", n, 65537, COHORT_SUM, n - 1, false, 8}, rng);
    run_case({Collective::kScan, "chain", n, 65537, COHORT_MAX, 0, true, 8}, rng);
    run_case({Collective::kExscan, "chain", n, 65537, COHORT_SUM, 0, false, 8}, rng);
    run_case({Collective::kExscan, "chain", n, 65537, COHORT_MIN, 0, true, 8}, rng);
    run_case({Collective::kReduceScatter, "ring", n, static_cast<size_t>(65537 / n), COHORT_SUM, 0,
              false, 8},
             rng);
  }
}

}  // namespace cohort::coll
