// The v-variants (allgatherv, alltoallv, gatherv, scatterv, reduce_scatterv) on host memory.
// Every rank draws the whole case from its seed (every rank's counts, every layout, every
// input) and computes its expected output on its own, so nothing is checked against Cohort
// itself.  Counts per rank include zeros, and in the large cases blocks big enough for the
// single-copy path; blocks sit out of rank order with gaps, whose bytes (and 64 guard bytes
// around each buffer) must stay untouched.  In place or not, blocking or posted (a posted
// call's count arrays are scribbled over before the wait: the call must have copied them).
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "host_colls.h"
#include "test_values.h"

namespace mpi_test {
namespace {

constexpr unsigned char kGap = 0xA5;  // every byte no block covers
constexpr size_t kGuard = 64;

enum VKind { kAllgatherv, kAlltoallv, kGatherv, kScatterv, kReduceScatterv };
const char *const kVNames[] = {"allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatterv"};
enum class Sizes { kSmall, kLarge, kZero };

struct VCase {
  VKind kind;
  cohort_dtype_t dtype;
  cohort_op_t op;
  int root;
  bool in_place;
  bool posted;
  Sizes sizes;
  uint64_t seed;
};

// splitmix64: the same sequence on every rank for one seed.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

size_t draw_count(Rng &rng, Sizes sizes) {
  static const size_t kSmallCounts[] = {0, 0, 1, 2, 3, 7, 17, 64, 101};
  static const size_t kLargeCounts[] = {0, 1, 1000, 9001, 70001};
  if (sizes == Sizes::kZero) return 0;
  if (sizes == Sizes::kSmall) return kSmallCounts[rng.below(std::size(kSmallCounts))];
  return kLargeCounts[rng.below(std::size(kLargeCounts))];
}

std::vector<size_t> draw_counts(Rng &rng, Sizes sizes, int n) {
  std::vector<size_t> counts(n);
  for (size_t &c : counts) c = draw_count(rng, sizes);
  return counts;
}

// A blocked buffer: block q of counts[q] elements at displs[q]; the blocks in shuffled order,
// 0-3 elements of gap before each.
struct Layout {
  std::vector<size_t> counts, displs;
  size_t extent = 0;
};

Layout place(const std::vector<size_t> &counts, Rng &rng) {
  Layout l{counts, std::vector<size_t>(counts.size()), 0};
  std::vector<int> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  for (int q : order) {
    l.displs[q] = l.extent + rng.below(4);
    l.extent = l.displs[q] + counts[q];
  }
  l.extent += rng.below(4);
  return l;
}

// Elements between guards, every byte kGap until written.
struct Guarded {
  size_t elem;
  std::vector<unsigned char> bytes;
  Guarded(size_t elements, size_t elem_size)
      : elem(elem_size), bytes(2 * kGuard + elements * elem_size, kGap) {}
  unsigned char *at(size_t element) { return bytes.data() + kGuard + element * elem; }
};

// The data `source` sends `dest`: its bytes say where they came from and went to.
void fill_block(unsigned char *at, size_t count, size_t elem, int source, int dest) {
  for (size_t b = 0; b < count * elem; ++b) {
    at[b] = static_cast<unsigned char>(source * 37 + dest * 11 + b * 7 + 1);
  }
}

long wrong_bytes(const Guarded &got, const Guarded &want) {
  long bad = 0;
  for (size_t i = 0; i < got.bytes.size(); ++i) bad += got.bytes[i] != want.bytes[i];
  return bad;
}

// `call(request)` runs the collective blocking (request null) or posts it; posted, the count
// arrays in `scribble` are overwritten before the wait.
cohort_status_t run_call(bool posted, std::vector<std::vector<size_t> *> scribble,
                         const std::function<cohort_status_t(cohort_request_t *)> &call) {
  if (!posted) return call(nullptr);
  cohort_request_t request = nullptr;
  cohort_status_t s = call(&request);
  if (s != COHORT_SUCCESS) return s;
  for (std::vector<size_t> *v : scribble) std::fill(v->begin(), v->end(), SIZE_MAX / 3);
  s = cohort_request_wait(request);
  cohort_request_free(request);
  return s;
}

// A case's outcome on this rank: the call's status and its wrong bytes.
struct Outcome {
  cohort_status_t status;
  long bad;
};

Outcome run_allgatherv(cohort_team_t team, const VCase &c, size_t elem) {
  Rng rng{c.seed};
  Layout l = place(draw_counts(rng, c.sizes, g_size), rng);
  Guarded out(l.extent, elem), want(l.extent, elem);
  for (int q = 0; q < g_size; ++q) fill_block(want.at(l.displs[q]), l.counts[q], elem, q, 0);
  Guarded in(l.counts[g_rank], elem);
  fill_block(in.at(0), l.counts[g_rank], elem, g_rank, 0);
  const void *send = in.at(0);
  if (c.in_place) {
    send = out.at(l.displs[g_rank]);
    fill_block(out.at(l.displs[g_rank]), l.counts[g_rank], elem, g_rank, 0);
  }
  cohort_status_t s = run_call(c.posted, {&l.counts, &l.displs}, [&](cohort_request_t *r) {
    return r ? cohort_allgatherv_post(team, send, out.at(0), l.counts.data(), l.displs.data(),
                                      c.dtype, r)
             : cohort_allgatherv(team, send, out.at(0), l.counts.data(), l.displs.data(), c.dtype);
  });
  return {s, wrong_bytes(out, want)};
}

// counts[p][q]: what rank p sends rank q (symmetric in place: one layout serves both sides).
std::vector<std::vector<size_t>> draw_matrix(Rng &rng, const VCase &c) {
  std::vector<std::vector<size_t>> m(g_size, std::vector<size_t>(g_size));
  for (int p = 0; p < g_size; ++p) {
    for (int q = 0; q < g_size; ++q)
      m[p][q] = c.in_place && q < p ? m[q][p] : draw_count(rng, c.sizes);
  }
  return m;
}

Outcome run_alltoallv(cohort_team_t team, const VCase &c, size_t elem) {
  Rng rng{c.seed};
  const auto m = draw_matrix(rng, c);
  std::vector<size_t> sendcounts(g_size), recvcounts(g_size);
  for (int q = 0; q < g_size; ++q) {
    sendcounts[q] = m[g_rank][q];
    recvcounts[q] = m[q][g_rank];
  }
  Rng mine{c.seed * 1000 + static_cast<uint64_t>(g_rank)};  // each rank's own layouts
  Layout sl = place(sendcounts, mine), rl = place(recvcounts, mine);
  Guarded in(sl.extent, elem), out(rl.extent, elem), want(rl.extent, elem);
  for (int q = 0; q < g_size; ++q) {
    fill_block(in.at(sl.displs[q]), sl.counts[q], elem, g_rank, q);
    fill_block(want.at(rl.displs[q]), rl.counts[q], elem, q, g_rank);
    if (c.in_place) fill_block(out.at(rl.displs[q]), rl.counts[q], elem, g_rank, q);
  }
  const void *send = c.in_place ? out.at(0) : in.at(0);
  const size_t *sc = c.in_place ? nullptr : sl.counts.data();
  const size_t *sd = c.in_place ? nullptr : sl.displs.data();
  cohort_status_t s = run_call(
      c.posted, {&sl.counts, &sl.displs, &rl.counts, &rl.displs}, [&](cohort_request_t *r) {
        return r ? cohort_alltoallv_post(team, send, sc, sd, out.at(0), rl.counts.data(),
                                         rl.displs.data(), c.dtype, r)
                 : cohort_alltoallv(team, send, sc, sd, out.at(0), rl.counts.data(),
                                    rl.displs.data(), c.dtype);
      });
  return {s, wrong_bytes(out, want)};
}

Outcome run_gatherv(cohort_team_t team, const VCase &c, size_t elem) {
  Rng rng{c.seed};
  Layout l = place(draw_counts(rng, c.sizes, g_size), rng);
  const bool root = g_rank == c.root;
  Guarded out(root ? l.extent : 0, elem), want(root ? l.extent : 0, elem);
  for (int q = 0; q < g_size && root; ++q) {
    fill_block(want.at(l.displs[q]), l.counts[q], elem, q, c.root);
  }
  const size_t sendcount = l.counts[g_rank];
  Guarded in(sendcount, elem);
  fill_block(in.at(0), sendcount, elem, g_rank, c.root);
  const void *send = in.at(0);
  if (root && c.in_place) {
    send = out.at(l.displs[g_rank]);
    fill_block(out.at(l.displs[g_rank]), sendcount, elem, g_rank, c.root);
  }
  // Only the root's receive side is used: the others pass NULL.
  void *recv = root ? out.at(0) : nullptr;
  const size_t *counts = root ? l.counts.data() : nullptr;
  const size_t *displs = root ? l.displs.data() : nullptr;
  cohort_status_t s = run_call(c.posted, {&l.counts, &l.displs}, [&](cohort_request_t *r) {
    return r ? cohort_gatherv_post(team, send, sendcount, recv, counts, displs, c.dtype, c.root, r)
             : cohort_gatherv(team, send, sendcount, recv, counts, displs, c.dtype, c.root);
  });
  return {s, wrong_bytes(out, want)};
}

Outcome run_scatterv(cohort_team_t team, const VCase &c, size_t elem) {
  Rng rng{c.seed};
  Layout l = place(draw_counts(rng, c.sizes, g_size), rng);
  const bool root = g_rank == c.root;
  const size_t recvcount = l.counts[g_rank];
  Guarded in(root ? l.extent : 0, elem), out(recvcount, elem), want(recvcount, elem);
  for (int q = 0; q < g_size && root; ++q) {
    fill_block(in.at(l.displs[q]), l.counts[q], elem, c.root, q);
  }
  fill_block(want.at(0), recvcount, elem, c.root, g_rank);
  // In place the root's output is its own block of the input, which must stay as it was.
  const Guarded in_before = in;
  void *recv = root && c.in_place ? in.at(l.displs[g_rank]) : out.at(0);
  if (root && c.in_place) fill_block(out.at(0), recvcount, elem, c.root, g_rank);
  const void *send = root ? in.at(0) : nullptr;
  const size_t *counts = root ? l.counts.data() : nullptr;
  const size_t *displs = root ? l.displs.data() : nullptr;
  cohort_status_t s = run_call(c.posted, {&l.counts, &l.displs}, [&](cohort_request_t *r) {
    return r ? cohort_scatterv_post(team, send, counts, displs, recv, recvcount, c.dtype, c.root, r)
             : cohort_scatterv(team, send, counts, displs, recv, recvcount, c.dtype, c.root);
  });
  return {s, wrong_bytes(out, want) + wrong_bytes(in, in_before)};
}

// Exact in every dtype: small integers (products of 1s and 2s, |sums| <= 8 * ranks).
double reduce_input(const VCase &c, int rank, size_t i) {
  if (c.op == COHORT_PROD) return 1 + static_cast<double>((rank + i) % 2);
  const double v = static_cast<double>((rank * 7 + i * 3) % 9);
  const bool is_unsigned =
      c.dtype == COHORT_UINT8 || c.dtype == COHORT_UINT32 || c.dtype == COHORT_UINT64;
  return is_unsigned ? v : v - 4;
}

double reduced(const VCase &c, size_t i) {
  double r = reduce_input(c, 0, i);
  for (int p = 1; p < g_size; ++p) {
    const double v = reduce_input(c, p, i);
    r = c.op == COHORT_PROD  ? r * v
        : c.op == COHORT_MIN ? std::min(r, v)
        : c.op == COHORT_MAX ? std::max(r, v)
                             : r + v;
  }
  return c.op == COHORT_AVG ? r / g_size : r;
}

Outcome run_reduce_scatterv(cohort_team_t team, const VCase &c, size_t elem) {
  Rng rng{c.seed};
  std::vector<size_t> counts = draw_counts(rng, c.sizes, g_size);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t start = std::accumulate(counts.begin(), counts.begin() + g_rank, size_t{0});
  const size_t mine = counts[g_rank];
  Guarded in(total, elem), out(mine, elem), want(mine, elem);
  for (size_t i = 0; i < total; ++i) store(c.dtype, in.at(0), i, reduce_input(c, g_rank, i));
  for (size_t i = 0; i < mine; ++i) store(c.dtype, want.at(0), i, reduced(c, start + i));
  // In place the result replaces this rank's block of the input; the rest is not looked at.
  Guarded &result = c.in_place ? in : out;
  void *recv = c.in_place ? in.at(start) : out.at(0);
  cohort_status_t s = run_call(c.posted, {&counts}, [&](cohort_request_t *r) {
    return r ? cohort_reduce_scatterv_post(team, in.at(0), recv, counts.data(), c.dtype, c.op, r)
             : cohort_reduce_scatterv(team, in.at(0), recv, counts.data(), c.dtype, c.op);
  });
  long bad = 0;
  for (size_t b = 0; b < mine * elem; ++b)
    bad += result.at(c.in_place ? start : 0)[b] != want.at(0)[b];
  for (size_t g = 0; g < kGuard; ++g) {
    bad += result.bytes[g] != kGap;
    bad += result.bytes[result.bytes.size() - 1 - g] != kGap;
  }
  return {s, bad};
}

long run_vcase(cohort_team_t team, const VCase &c) {
  const size_t elem = elem_bytes(c.dtype);
  Outcome o{};
  switch (c.kind) {
    case kAllgatherv: o = run_allgatherv(team, c, elem); break;
    case kAlltoallv: o = run_alltoallv(team, c, elem); break;
    case kGatherv: o = run_gatherv(team, c, elem); break;
    case kScatterv: o = run_scatterv(team, c, elem); break;
    case kReduceScatterv: o = run_reduce_scatterv(team, c, elem); break;
  }
  CHECK(o.status == COHORT_SUCCESS, "%s: %s", kVNames[c.kind], cohort_last_error());
  CHECK(o.bad == 0, "%s dtype %d op %d root %d sizes %d seed %llu%s%s: %ld wrong bytes",
        kVNames[c.kind], c.dtype, c.op, c.root, static_cast<int>(c.sizes),
        static_cast<unsigned long long>(c.seed), c.in_place ? " in place" : "",
        c.posted ? " posted" : "", o.bad);
  return o.status == COHORT_SUCCESS ? o.bad : 1;
}

// Every case of the matrix, in one order on every rank.
std::vector<VCase> vcases() {
  std::vector<VCase> cases;
  uint64_t seed = 1;
  auto add = [&](VKind kind, cohort_dtype_t dtype, cohort_op_t op, int root, Sizes sizes) {
    for (bool in_place : {false, true}) {
      cases.push_back({kind, dtype, op, root, in_place, seed % 2 == 0, sizes, seed});
      ++seed;
    }
  };
  const Sizes all_sizes[] = {Sizes::kSmall, Sizes::kLarge, Sizes::kZero};
  // Moving blocks reads no values: one dtype of each element size.
  for (VKind kind : {kAllgatherv, kAlltoallv, kGatherv, kScatterv}) {
    for (cohort_dtype_t dtype : {COHORT_UINT8, COHORT_FLOAT16, COHORT_INT32, COHORT_FLOAT64}) {
      for (Sizes sizes : all_sizes) {
        const bool rooted = kind == kGatherv || kind == kScatterv;
        add(kind, dtype, COHORT_SUM, 0, sizes);
        if (rooted && g_size > 1) add(kind, dtype, COHORT_SUM, g_size - 1, sizes);
      }
    }
  }
  for (int t = 0; t < COHORT_NUM_DTYPES; ++t) {
    const auto dtype = static_cast<cohort_dtype_t>(t);
    for (cohort_op_t op : {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX}) {
      add(kReduceScatterv, dtype, op, 0, t % 2 == 0 ? Sizes::kSmall : Sizes::kLarge);
    }
  }
  for (cohort_dtype_t dtype : {COHORT_FLOAT32, COHORT_FLOAT64}) {
    for (Sizes sizes : all_sizes) add(kReduceScatterv, dtype, COHORT_AVG, 0, sizes);
  }
  return cases;
}

}  // namespace

void scenario_vmatrix() {
  FakeHosts hosts;
  cohort::Team team(MPI_COMM_WORLD);
  long cases = 0, wrong = 0;
  for (const VCase &c : vcases()) {
    wrong += run_vcase(team.get(), c);
    ++cases;
  }
  if (g_rank == 0) printf("%ld v-collective calls checked, %ld wrong bytes\n", cases, wrong);
}

}  // namespace mpi_test
