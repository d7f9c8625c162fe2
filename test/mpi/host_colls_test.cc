// Gather, scatter, scan and exscan on host memory, each checked against MPI's own (MPI_Gather,
// MPI_Scatter, MPI_Scan, MPI_Exscan) on the same inputs: every dtype (x every op but avg for
// the scans; fp16 and bf16 reduced by MPI in float, on small integers that are exact), counts
// {0, 1, 7, 1023, 65537}, several roots, in place or not, blocking and posted.  The 64 bytes
// around each output must stay untouched, and so must the buffers a rank does not use (a
// non-root's gather output, rank 0's exscan output).
//   mpirun -np N host_colls_test SCENARIO [--quick 1] [--per-node K]
// Scenarios: matrix (the cases above), in-flight (several posted at once, waited for in
// reverse), errors (named refusals, and the buffers that may be NULL); vmatrix and verrors
// do the same for the v-variants (host_vcolls.cc).
#include <algorithm>
#include <climits>
#include <vector>

#include "host_colls.h"
#include "test_values.h"

using namespace mpi_test;

namespace {

enum Kind { kGather, kScatter, kScan, kExscan };
const char *const kKindNames[] = {"gather", "scatter", "scan", "exscan"};
constexpr size_t kGuard = 64;  // bytes checked on each side of an output
constexpr char kGuardByte = static_cast<char>(0xA5);

struct Case {
  Kind kind;
  cohort_dtype_t dtype;
  cohort_op_t op;
  size_t count;
  int root;
  bool in_place;
  bool posted;
};

// One rank's buffers for a case: the input, and guard + region + guard where the output goes
// (and, in place, the input too).
struct Buffers {
  size_t elem = 0, in_n = 0, out_n = 0;
  std::vector<char> in, out;
  char *region() { return out.data() + kGuard; }
  size_t region_bytes() const { return std::max(in_n, out_n) * elem; }
};

bool is_signed(cohort_dtype_t t) {
  return t != COHORT_UINT8 && t != COHORT_UINT32 && t != COHORT_UINT64;
}

// Exact in every dtype: small integers (products of 1s and 2s, |sums| <= 8 * ranks).
double input_value(const Case &c, int rank, size_t i) {
  const double v = static_cast<double>((rank * 7 + i * 3) % 9);
  if (c.op == COHORT_PROD) return 1 + static_cast<double>((rank + i) % 2);
  return is_signed(c.dtype) ? v - 4 : v;
}

// fp16 and bf16 have no MPI type: the oracle reduces them widened to float.
bool widened(cohort_dtype_t t) { return t == COHORT_FLOAT16 || t == COHORT_BFLOAT16; }

Buffers make_buffers(const Case &c, int rank, int size) {
  Buffers b;
  b.elem = elem_bytes(c.dtype);
  const size_t blocks = c.count * static_cast<size_t>(size);
  b.in_n = c.kind == kScatter ? blocks : c.count;
  b.out_n = c.kind == kGather ? blocks : c.count;
  b.in.resize(std::max<size_t>(b.in_n, 1) * b.elem);
  for (size_t i = 0; i < b.in_n; ++i) store(c.dtype, b.in.data(), i, input_value(c, rank, i));
  b.out.assign(2 * kGuard + b.region_bytes(), kGuardByte);
  return b;
}

// Where this rank's call reads and writes: in place, the root's block of its larger buffer.
void call_buffers(const Case &c, Buffers &b, int rank, const void **send, void **recv) {
  *send = b.in.data();
  *recv = b.region();
  if (c.in_place && (c.kind == kScan || c.kind == kExscan)) {
    std::memcpy(b.region(), b.in.data(), b.in_n * b.elem);
    *send = b.region();
    return;
  }
  if (!c.in_place || rank != c.root) return;
  const size_t own = static_cast<size_t>(c.root) * c.count * b.elem;
  if (c.kind == kGather) {
    std::memcpy(b.region() + own, b.in.data(), c.count * b.elem);
    *send = b.region() + own;
  } else {
    std::memcpy(b.region(), b.in.data(), b.in_n * b.elem);
    *send = b.region();
    *recv = b.region() + own;
  }
}

cohort_status_t post_or_run(cohort_team_t team, const Case &c, const void *send, void *recv) {
  cohort_request_t request = nullptr;
  cohort_status_t s = COHORT_SUCCESS;
  switch (c.kind) {
    case kGather:
      if (!c.posted) return cohort_gather(team, send, recv, c.count, c.dtype, c.root);
      s = cohort_gather_post(team, send, recv, c.count, c.dtype, c.root, &request);
      break;
    case kScatter:
      if (!c.posted) return cohort_scatter(team, send, recv, c.count, c.dtype, c.root);
      s = cohort_scatter_post(team, send, recv, c.count, c.dtype, c.root, &request);
      break;
    case kScan:
      if (!c.posted) return cohort_scan(team, send, recv, c.count, c.dtype, c.op);
      s = cohort_scan_post(team, send, recv, c.count, c.dtype, c.op, &request);
      break;
    case kExscan:
      if (!c.posted) return cohort_exscan(team, send, recv, c.count, c.dtype, c.op);
      s = cohort_exscan_post(team, send, recv, c.count, c.dtype, c.op, &request);
      break;
  }
  if (s != COHORT_SUCCESS) return s;
  s = cohort_request_wait(request);
  cohort_request_free(request);
  return s;
}

// MPI_Scan or MPI_Exscan on this rank's input, stored back in the case's dtype.
std::vector<char> run_prefix_oracle(const Case &c, const Buffers &b) {
  MPI_Datatype type = MPI_FLOAT;
  if (!widened(c.dtype)) cohort_dtype_to_mpi(c.dtype, &type);
  MPI_Op op = MPI_OP_NULL;
  cohort_op_to_mpi(c.op, &op);
  const size_t wide_elem = widened(c.dtype) ? sizeof(float) : b.elem;
  std::vector<char> in(std::max<size_t>(b.in_n, 1) * wide_elem), out(in.size());
  const cohort_dtype_t wide = widened(c.dtype) ? COHORT_FLOAT32 : c.dtype;
  for (size_t i = 0; i < b.in_n; ++i) store(wide, in.data(), i, load(c.dtype, b.in.data(), i));
  const int n = static_cast<int>(c.count);
  if (c.kind == kScan) {
    MPI_Scan(in.data(), out.data(), n, type, op, MPI_COMM_WORLD);
  } else {
    MPI_Exscan(in.data(), out.data(), n, type, op, MPI_COMM_WORLD);
  }
  std::vector<char> result(b.out_n * b.elem);
  for (size_t i = 0; i < b.out_n; ++i) store(c.dtype, result.data(), i, load(wide, out.data(), i));
  return result;
}

// MPI's output for this rank on the same inputs, as bytes (empty: this rank has none).
std::vector<char> run_oracle(const Case &c, const Buffers &b, int rank) {
  if (c.kind == kScan || c.kind == kExscan) {
    std::vector<char> result = run_prefix_oracle(c, b);
    if (c.kind == kExscan && rank == 0) return {};
    return result;
  }
  const int bytes = static_cast<int>(c.count * b.elem);
  std::vector<char> result(std::max<size_t>(b.out_n, 1) * b.elem);
  switch (c.kind) {
    case kGather:
      MPI_Gather(b.in.data(), bytes, MPI_BYTE, result.data(), bytes, MPI_BYTE, c.root,
                 MPI_COMM_WORLD);
      if (rank != c.root) return {};
      break;
    case kScatter:
      MPI_Scatter(b.in.data(), bytes, MPI_BYTE, result.data(), bytes, MPI_BYTE, c.root,
                  MPI_COMM_WORLD);
      break;
    default: break;
  }
  result.resize(b.out_n * b.elem);
  return result;
}

// Wrong bytes of this rank's output (or of a buffer it must leave alone) and its guards.
long check_case(const Case &c, Buffers &b, const std::vector<char> &want, int rank) {
  long bad = 0;
  for (size_t i = 0; i < kGuard; ++i) {
    bad += b.out[i] != kGuardByte;
    bad += b.out[kGuard + b.region_bytes() + i] != kGuardByte;
  }
  const size_t own = static_cast<size_t>(c.root) * c.count * b.elem;
  const char *result = b.region();
  if (c.kind == kScatter && c.in_place && rank == c.root) result += own;
  if (want.empty()) {  // a non-root's gather output, rank 0's exscan output: untouched
    const bool holds_input = c.kind == kExscan && c.in_place;
    for (size_t i = 0; i < b.region_bytes(); ++i) {
      bad += b.region()[i] != (holds_input ? b.in[i] : kGuardByte);
    }
    return bad;
  }
  for (size_t i = 0; i < want.size(); ++i) bad += result[i] != want[i];
  return bad;
}

long run_case(cohort_team_t team, const Case &c) {
  Buffers b = make_buffers(c, g_rank, g_size);
  const void *send = nullptr;
  void *recv = nullptr;
  call_buffers(c, b, g_rank, &send, &recv);
  cohort_status_t s = post_or_run(team, c, send, recv);
  const std::vector<char> want = run_oracle(c, b, g_rank);
  CHECK(s == COHORT_SUCCESS, "%s: %s", kKindNames[c.kind], cohort_last_error());
  if (s != COHORT_SUCCESS) return 1;
  const long bad = check_case(c, b, want, g_rank);
  CHECK(bad == 0, "%s dtype %d op %d count %zu root %d%s%s: %ld wrong bytes", kKindNames[c.kind],
        c.dtype, c.op, c.count, c.root, c.in_place ? " in place" : "", c.posted ? " posted" : "",
        bad);
  return bad;
}

std::vector<int> roots() {
  std::vector<int> r = {0, g_size - 1, g_size / 2};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

void scenario_matrix() {
  FakeHosts hosts;
  cohort::Team team(MPI_COMM_WORLD);
  std::vector<size_t> counts = {0, 1, 7, 1023, 65537};
  if (opt_int("quick", 0) != 0) counts = {0, 7, 1023};
  long cases = 0, wrong = 0;
  for (Kind kind : {kGather, kScatter}) {
    for (int t = 0; t < COHORT_NUM_DTYPES; ++t) {
      for (size_t count : counts) {
        for (int root : roots()) {
          for (bool in_place : {false, true}) {
            const bool posted = cases % 2 == 1;
            wrong += run_case(team.get(), {kind, static_cast<cohort_dtype_t>(t), COHORT_SUM, count,
                                           root, in_place, posted});
            ++cases;
          }
        }
      }
    }
  }
  for (Kind kind : {kScan, kExscan}) {
    for (int t = 0; t < COHORT_NUM_DTYPES; ++t) {
      for (cohort_op_t op : {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX}) {
        for (size_t count : counts) {
          for (bool in_place : {false, true}) {
            const bool posted = cases % 2 == 1;
            wrong += run_case(
                team.get(), {kind, static_cast<cohort_dtype_t>(t), op, count, 0, in_place, posted});
            ++cases;
          }
        }
      }
    }
  }
  if (g_rank == 0) printf("%ld collective calls checked, %ld wrong bytes\n", cases, wrong);
}

// Several posted at once complete in posting order whichever is waited for first.
void scenario_in_flight() {
  FakeHosts hosts;
  cohort::Team team(MPI_COMM_WORLD);
  const int n = g_size, r = g_rank, root = n - 1;
  std::vector<int32_t> mine(300, r), all(300 * n, -1), parts(300 * n), part(300, -1);
  for (int q = 0; q < n; ++q)
    std::fill(parts.begin() + q * 300, parts.begin() + (q + 1) * 300, q * 10);
  std::vector<int64_t> ranks(5, r + 1), before(5, -1);
  cohort_request_t req[5] = {};
  CHECK_STATUS(
      cohort_gather_post(team.get(), mine.data(), all.data(), 300, COHORT_INT32, root, &req[0]),
      COHORT_SUCCESS);
  CHECK_STATUS(cohort_scatter_post(team.get(), r == 0 ? parts.data() : nullptr, part.data(), 300,
                                   COHORT_INT32, 0, &req[1]),
               COHORT_SUCCESS);
  CHECK_STATUS(cohort_exscan_post(team.get(), ranks.data(), before.data(), 5, COHORT_INT64,
                                  COHORT_SUM, &req[2]),
               COHORT_SUCCESS);
  CHECK_STATUS(cohort_scan_post(team.get(), ranks.data(), ranks.data(), 5, COHORT_INT64, COHORT_SUM,
                                &req[3]),
               COHORT_SUCCESS);
  CHECK_STATUS(cohort_barrier_post(team.get(), &req[4]), COHORT_SUCCESS);
  for (int k = 4; k >= 0; --k) CHECK_STATUS(cohort_request_wait(req[k]), COHORT_SUCCESS);
  for (cohort_request_t &q : req) CHECK_STATUS(cohort_request_free(q), COHORT_SUCCESS);
  long bad = 0;
  for (int q = 0; q < n && r == root; ++q) bad += all[q * 300] != q || all[q * 300 + 299] != q;
  for (int32_t v : part) bad += v != r * 10;
  // Ranks 1..r+1 summed, in place; exscan (posted first) saw the inputs: 1..r, rank 0 untouched.
  for (int64_t v : ranks) bad += v != static_cast<int64_t>(r + 1) * (r + 2) / 2;
  for (int64_t v : before) bad += v != (r == 0 ? -1 : static_cast<int64_t>(r) * (r + 1) / 2);
  CHECK(bad == 0, "%ld wrong elements after posted collectives", bad);
}

// Refused alike on every rank: nothing sent, nothing written, a message naming the problem.
void scenario_errors() {
  FakeHosts hosts;
  cohort::Team team(MPI_COMM_WORLD);
  const int n = g_size;
  int32_t x = 5;
  std::vector<int32_t> out(n, 0);
  CHECK_STATUS(cohort_gather(team.get(), &x, out.data(), 1, COHORT_INT32, n),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "gather: root="), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_scatter(team.get(), out.data(), &x, 1, COHORT_INT32, -1),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "scatter: root=-1"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_gather(team.get(), nullptr, out.data(), 1, COHORT_INT32, 0),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "sendbuf is NULL"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_scatter(team.get(), out.data(), &x, SIZE_MAX / 2, COHORT_INT32, 0),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "count="), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_gather(team.get(), &x, out.data(), 1, static_cast<cohort_dtype_t>(99), 0),
               COHORT_ERR_INVALID_ARG);
  cohort_request_t request = nullptr;
  CHECK_STATUS(cohort_gather_post(team.get(), &x, out.data(), 1, COHORT_INT32, n, &request),
               COHORT_ERR_INVALID_ARG);
  CHECK(request == nullptr, "a refused post set its request");
  CHECK_STATUS(cohort_scan(team.get(), &x, out.data(), 1, COHORT_INT32, COHORT_AVG),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "scan: op avg has no prefix form"), "message: %s",
        cohort_last_error());
  CHECK_STATUS(
      cohort_exscan_post(team.get(), &x, out.data(), 1, COHORT_FLOAT32, COHORT_AVG, &request),
      COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "exscan: op avg"), "message: %s", cohort_last_error());
  CHECK_STATUS(
      cohort_scan(team.get(), &x, out.data(), 1, COHORT_FLOAT32, static_cast<cohort_op_t>(7)),
      COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_scan(team.get(), &x, nullptr, 1, COHORT_INT32, COHORT_SUM),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "scan: recvbuf is NULL"), "message: %s", cohort_last_error());
  CHECK(x == 5 && std::count(out.begin(), out.end(), 0) == n, "a refused call wrote");
  // Registering buffers takes a team on one host with a GPU on every rank: refused by name on
  // every rank here (no GPU bound), before any exchange, and the team goes on.
  cohort_mem_reg_t reg = nullptr;
  CHECK_STATUS(cohort_mem_register(team.get(), out.data(), 4, &reg), COHORT_ERR_NOT_SUPPORTED);
  CHECK(reg == nullptr && contains(cohort_last_error(), "cohort_mem_register: "), "message: %s",
        cohort_last_error());
  CHECK_STATUS(cohort_mem_register(team.get(), out.data(), 4, nullptr), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "reg (output) is NULL"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_mem_deregister(team.get(), nullptr), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "registration is NULL"), "message: %s", cohort_last_error());
  // Unused buffers may be NULL: a non-root's gather output and scatter input.
  const int root = n - 1;
  CHECK_STATUS(
      cohort_gather(team.get(), &x, g_rank == root ? out.data() : nullptr, 1, COHORT_INT32, root),
      COHORT_SUCCESS);
  CHECK_STATUS(
      cohort_scatter(team.get(), g_rank == root ? out.data() : nullptr, &x, 1, COHORT_INT32, root),
      COHORT_SUCCESS);
  CHECK(x == 5, "scatter of gathered fives gave %d", x);
  int32_t below = -1;
  CHECK_STATUS(
      cohort_exscan(team.get(), &x, g_rank == 0 ? nullptr : &below, 1, COHORT_INT32, COHORT_MAX),
      COHORT_SUCCESS);
  CHECK(below == (g_rank == 0 ? -1 : 5), "exscan of fives gave %d", below);
}

}  // namespace

int main(int argc, char **argv) {
  const Scenarios scenarios = {
      {"matrix", scenario_matrix},   {"in-flight", scenario_in_flight}, {"errors", scenario_errors},
      {"vmatrix", scenario_vmatrix}, {"verrors", scenario_verrors},
  };
  return run_main(argc, argv, scenarios);
}
