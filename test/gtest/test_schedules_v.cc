// The v-variants' schedules on the simulator (schedule_sim.h): each rank's arguments go
// through the API's checks (check_vcall: layouts, own count, in place) and its schedule runs
// on rings in random order; outputs are compared with blocks placed directly, and every
// element outside the blocks (the gaps) must keep its fill.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "schedule_sim.h"
#include "team/coll_front.h"

namespace cohort::coll {
namespace {

constexpr Value kFill = -7777;

struct VCase {
  Collective collective;
  const char *algorithm;
  int n;
  bool in_place;
  int root;
};

// Per-rank arrays and buffers of one case, and where the call reads and writes (in place: a
// block of the other buffer).
struct RankData {
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
  size_t scalar_count = 0;  // gatherv's sendcount, scatterv's recvcount
  std::vector<Value> in, out, want;
  bool src_in_out = false, dst_in_in = false;
  size_t src_base = 0, dst_base = 0;
  std::vector<Value> &result() { return dst_in_in ? in : out; }
};

size_t draw(std::mt19937 &rng) {
  static const size_t kCounts[] = {0, 0, 1, 2, 5, 13, 40};
  return kCounts[rng() % std::size(kCounts)];
}

// Blocks in shuffled order with 0-2 elements of gap before each; returns the extent.
size_t place(const std::vector<size_t> &counts, std::vector<size_t> *displs, std::mt19937 &rng) {
  std::vector<int> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  displs->assign(counts.size(), 0);
  size_t end = 0;
  for (int q : order) {
    (*displs)[q] = end + rng() % 3;
    end = (*displs)[q] + counts[q];
  }
  return end + rng() % 3;
}

// The value of element i that rank `from` sends rank `to`.
Value value(int from, int to, size_t i) {
  return from * 100000 + to * 1000 + static_cast<Value>(i);
}

void fill(std::vector<Value> *v, size_t at, size_t count, int from, int to) {
  for (size_t i = 0; i < count; ++i) (*v)[at + i] = value(from, to, i);
}

// counts[p][q]: what rank p sends rank q, as each data-moving v-variant shapes it (symmetric for
// alltoallv in place, where one layout serves both sides).
std::vector<std::vector<size_t>> draw_matrix(const VCase &c, std::mt19937 &rng) {
  const int n = c.n;
  std::vector<std::vector<size_t>> m(n, std::vector<size_t>(n));
  for (int p = 0; p < n; ++p) {
    const size_t own = draw(rng);  // allgatherv's and gatherv's block, the same to every rank
    for (int q = 0; q < n; ++q) {
      switch (c.collective) {
        case Collective::kAllgatherv: m[p][q] = own; break;
        case Collective::kGatherv: m[p][q] = q == c.root ? own : 0; break;
        case Collective::kScatterv: m[p][q] = p == c.root ? draw(rng) : 0; break;
        default: m[p][q] = c.in_place && q < p ? m[q][p] : draw(rng);
      }
    }
  }
  return m;
}

// The layouts the API sees: a side that is one block (allgatherv's and gatherv's input,
// scatterv's output) is a scalar count at offset 0.
void draw_rank(const VCase &c, const std::vector<std::vector<size_t>> &m, int r, RankData *me,
               std::mt19937 &rng) {
  const int n = c.n;
  for (int q = 0; q < n; ++q) {
    me->send_counts.push_back(m[r][q]);
    me->recv_counts.push_back(m[q][r]);
  }
  const bool one_in =
      c.collective == Collective::kAllgatherv || c.collective == Collective::kGatherv;
  const bool one_out = c.collective == Collective::kScatterv;
  const size_t send_end = place(me->send_counts, &me->send_displs, rng);
  const size_t recv_end = place(me->recv_counts, &me->recv_displs, rng);
  me->scalar_count = one_in ? m[r][c.root] : one_out ? m[c.root][r] : 0;
  me->in.assign(one_in ? me->scalar_count : send_end, kFill);
  me->out.assign(one_out ? me->scalar_count : recv_end, kFill);
  if (one_in) {
    fill(&me->in, 0, me->scalar_count, r, 0);
  } else {
    for (int q = 0; q < n; ++q)
      fill(&me->in, me->send_displs[q], me->send_counts[q], r, one_out ? 0 : q);
  }
  me->want = me->out;
  if (one_out) {
    fill(&me->want, 0, me->scalar_count, c.root, 0);
  } else {
    for (int q = 0; q < n; ++q) {
      fill(&me->want, me->recv_displs[q], me->recv_counts[q], q, one_in ? 0 : r);
    }
  }
}

// In place: the input already in its block of the output, or the output a block of the input.
void make_in_place(const VCase &c, int r, RankData *me) {
  switch (c.collective) {
    case Collective::kAllgatherv:
    case Collective::kGatherv:
      if (c.collective == Collective::kGatherv && r != c.root) return;
      me->src_in_out = true;
      me->src_base = me->recv_displs[r];
      fill(&me->out, me->src_base, me->recv_counts[r], r, 0);
      return;
    case Collective::kScatterv:
      if (r != c.root) return;
      me->dst_in_in = true;
      me->dst_base = me->send_displs[r];
      me->want = me->in;  // the root's input stays as it is
      return;
    default:
      me->src_in_out = true;
      for (int q = 0; q < c.n; ++q) fill(&me->out, me->recv_displs[q], me->recv_counts[q], r, q);
  }
}

// What the API's checks make of one rank's call; the buffers are the vectors themselves.
CollArgs checked_args(const VCase &c, RankData &me, int r,
                      const std::vector<std::vector<int>> &rings,
                      const std::vector<std::vector<int>> &positions) {
  CollCall call;
  call.collective = c.collective;
  call.dtype = COHORT_INT64;
  call.op = COHORT_SUM;
  call.root = c.root;
  call.src = (me.src_in_out ? me.out : me.in).data() + me.src_base;
  call.dst = (me.dst_in_in ? me.in : me.out).data() + me.dst_base;
  call.count = me.scalar_count;
  call.arrays = {me.send_counts.data(), me.send_displs.data(), me.recv_counts.data(),
                 me.recv_displs.data()};
  CollArgs args;
  args.collective = c.collective;
  args.root = c.root;
  args.op = COHORT_SUM;
  args.rank = r;
  args.size = c.n;
  args.elem_size = sizeof(Value);
  args.ring = &rings[0];
  args.rings = &rings;
  args.ring_positions = &positions;
  EXPECT_EQ(check_vcall(call, &args), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(args.in_place, me.src_in_out || me.dst_in_in);
  return args;
}

void run_vcase(const VCase &c, std::mt19937 &rng) {
  SCOPED_TRACE(std::string(collective_name(c.collective)) + " n=" + std::to_string(c.n) +
               " root=" + std::to_string(c.root) + (c.in_place ? " in place" : ""));
  const auto m = draw_matrix(c, rng);
  std::vector<RankData> d(c.n);
  std::vector<std::vector<int>> rings(1, std::vector<int>(c.n)), positions = rings;
  std::iota(rings[0].begin(), rings[0].end(), 0);
  std::shuffle(rings[0].begin(), rings[0].end(), rng);
  for (int i = 0; i < c.n; ++i) positions[0][rings[0][i]] = i;
  Simulator sim(c.n, COHORT_SUM);
  for (int r = 0; r < c.n; ++r) {
    RankData &me = d[r];
    draw_rank(c, m, r, &me, rng);
    if (c.in_place) make_in_place(c, r, &me);
    CollArgs args = checked_args(c, me, r, rings, positions);
    SimRank &sr = sim.rank(r);
    sr.src = me.src_in_out ? &me.out : &me.in;
    sr.src_base = me.src_base;
    sr.dst = me.dst_in_in ? &me.in : &me.out;
    sr.dst_base = me.dst_base;
    sr.algorithm = find_algorithm(c.collective, c.algorithm)->make(args);
  }
  ASSERT_TRUE(sim.run());
  for (int r = 0; r < c.n; ++r) EXPECT_EQ(d[r].result(), d[r].want) << "rank " << r;
}

TEST(VSchedules, DataMovementPlacesEveryBlockAndLeavesTheGaps) {
  std::mt19937 rng(5);
  const std::pair<Collective, const char *> algorithms[] = {{Collective::kAllgatherv, "ring"},
                                                            {Collective::kAlltoallv, "pairwise"},
                                                            {Collective::kGatherv, "direct"},
                                                            {Collective::kScatterv, "direct"}};
  for (auto [collective, name] : algorithms) {
    for (int n : {1, 2, 3, 5, 8}) {
      for (bool in_place : {false, true}) {
        for (int root : {0, n - 1}) {
          for (int round = 0; round < 3; ++round) {
            run_vcase({collective, name, n, in_place, root}, rng);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// In place, alltoallv's first step copies its input to scratch: only the span its non-empty
// blocks cover.  The Open MPI component stages exactly that span of a GPU buffer, so an
// element before the first block (or at an empty block's displacement past the last) lies
// outside the staged copy: reading it crashed a staged MPI_Alltoallv on an H100.
TEST(VSchedules, AlltoallvInPlaceCopiesOnlyItsBlocks) {
  const size_t counts[3] = {4, 0, 2}, displs[3] = {10, 90, 20};
  std::vector<Value> buffer(100);
  CollCall call;
  call.collective = Collective::kAlltoallv;
  call.dtype = COHORT_INT64;
  call.src = buffer.data();
  call.dst = buffer.data();
  call.arrays.recv_counts = counts;
  call.arrays.recv_displs = displs;
  CollArgs args;
  args.collective = call.collective;
  args.rank = 0;
  args.size = 3;
  args.elem_size = sizeof(Value);
  ASSERT_EQ(check_vcall(call, &args), COHORT_SUCCESS) << last_error();
  ASSERT_TRUE(args.in_place);
  auto algorithm = find_algorithm(call.collective, "pairwise")->make(args);
  std::vector<Action> first;
  algorithm->step(0, &first);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].verb, Verb::kCopy);
  EXPECT_EQ(first[0].src.buffer, Buffer::kSrc);
  EXPECT_EQ(first[0].src.offset, 10u) << "from the first non-empty block";
  EXPECT_EQ(first[0].src.count, 12u) << "to the end of the last non-empty block (22)";
  EXPECT_EQ(first[0].dst.offset, 10u);
  EXPECT_GE(algorithm->scratch_count(), 22u);
}

// Blocks of any size around rings in any order: rank r gets op over every rank's block r.
void run_reduce_scatterv(int n, cohort_op_t op, bool in_place, std::mt19937 &rng) {
  SCOPED_TRACE("reduce_scatterv n=" + std::to_string(n) + " op=" + std::to_string(op) +
               (in_place ? " in place" : ""));
  std::vector<size_t> counts(n);
  for (size_t &k : counts) k = draw(rng);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  std::vector<std::vector<int>> rings(1, std::vector<int>(n)), positions = rings;
  std::iota(rings[0].begin(), rings[0].end(), 0);
  std::shuffle(rings[0].begin(), rings[0].end(), rng);
  for (int i = 0; i < n; ++i) positions[0][rings[0][i]] = i;
  std::vector<std::vector<Value>> in(n, std::vector<Value>(total)), out(n);
  for (auto &v : in) {
    for (Value &x : v) x = static_cast<Value>(rng() % 7) - 3;
  }
  Simulator sim(n, op);
  size_t start = 0;
  std::vector<size_t> starts(n);
  for (int r = 0; r < n; ++r) {
    starts[r] = start;
    out[r].assign(counts[r], kFill);
    CollCall call;
    call.collective = Collective::kReduceScatterv;
    call.dtype = COHORT_INT64;
    call.op = op;
    call.src = in[r].data();
    call.dst = in_place ? in[r].data() + start : out[r].data();
    call.arrays.recv_counts = counts.data();
    CollArgs args;
    args.collective = call.collective;
    args.op = op;
    args.rank = r;
    args.size = n;
    args.elem_size = sizeof(Value);
    args.ring = &rings[0];
    args.rings = &rings;
    args.ring_positions = &positions;
    ASSERT_EQ(check_vcall(call, &args), COHORT_SUCCESS) << last_error();
    EXPECT_EQ(args.in_place, in_place && total > 0) << "no buffer (NULL) is never in place";
    SimRank &sr = sim.rank(r);
    sr.src = &in[r];
    sr.dst = in_place ? &in[r] : &out[r];
    sr.dst_base = in_place ? start : 0;
    sr.algorithm = find_algorithm(call.collective, "ring")->make(args);
    start += counts[r];
  }
  // The expected blocks, before an in-place run overwrites the inputs.
  std::vector<std::vector<Value>> want(n);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < counts[r]; ++i) {
      Value v = in[0][starts[r] + i];
      for (int p = 1; p < n; ++p) v = apply(op, v, in[p][starts[r] + i]);
      want[r].push_back(op == COHORT_AVG ? v / n : v);
    }
  }
  ASSERT_TRUE(sim.run());
  for (int r = 0; r < n; ++r) {
    std::vector<Value> got = in_place ? std::vector<Value>(in[r].begin() + starts[r],
                                                           in[r].begin() + starts[r] + counts[r])
                                      : out[r];
    EXPECT_EQ(got, want[r]) << "rank " << r;
  }
}

TEST(VSchedules, ReduceScattervReducesBlocksOfAnySize) {
  std::mt19937 rng(11);
  for (int n : {1, 2, 3, 5, 8}) {
    for (cohort_op_t op : {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG}) {
      for (bool in_place : {false, true}) {
        for (int round = 0; round < 3; ++round) {
          run_reduce_scatterv(n, op, in_place, rng);
          if (testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace cohort::coll
