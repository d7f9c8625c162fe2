// Randomized collectives checked against MPI.  usage:
//   mpirun -np N coll_random [--iters N] [--seed S] [--max-count C] [--per-node K]
// Every rank draws the same sequence of cases (collective, dtype, op, count, root, in place)
// from one seeded generator, runs each through Cohort and the matching MPI collective on the
// same inputs (the oracle: an independent implementation), and compares every element; the
// bytes around each output must stay untouched, and so must a non-root's reduce output.
// Inputs are small integers, so every reduction is exact in every dtype (fp16 and bf16 are
// reduced by MPI in float).  --per-node K puts ranks on fake hosts of K ranks (UCX between).
// --memory device runs every case on device memory (the CUDA driver's, real or the tests' fake
// one: test/ompi/fake_cuda.c), copied in before and out after; --stream N enqueues the calls
// on N streams of its own in turn (the stream-ordered calls; each case waits for its stream),
// every other one chased, before its stream is waited for, by a blocking allreduce of a small
// buffer of its own (it shares the team's staging memory with the call still on the stream).
// --graph N (with --stream) captures each stream call into a CUDA graph and replays it N times
// on fresh inputs, each replay followed on its stream by a stream-ordered allreduce of a small
// buffer (queued on the host before the replay's pieces may be), every other one chased by the
// blocking allreduce too; each replay's output must equal the first's.  At the end, a call
// captured on a team of its own is replayed after that team was destroyed: its stream must
// go on.
// The process may not gain threads after the first case (one progress engine per process).
// Prints "coll_random: N collectives on P ranks, M mismatches, T s"; exits 1 on a mismatch.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cohort_mpi.h"
#include "cohort.hpp"
#include "cuda_driver_test.h"
#include "random_options.h"
#include "test_values.h"

namespace {

enum Kind { kAllreduce, kReduce, kBroadcast, kAllgather, kReduceScatter, kAlltoall, kBarrier };
const char *const kKindNames[] = {"allreduce",      "reduce",   "broadcast", "allgather",
                                  "reduce_scatter", "alltoall", "barrier"};
constexpr size_t kGuard = 64;  // bytes checked on each side of an output
constexpr unsigned char kGuardByte = 0xA5;

struct Case {
  Kind kind;
  cohort_dtype_t dtype;
  cohort_op_t op;
  size_t count;
  int root;
  bool in_place;
};

using Options = mpi_test::RandomOptions;

bool reduces(Kind k) { return k == kAllreduce || k == kReduce || k == kReduceScatter; }

// Mostly small counts (latency paths), some medium, a few large (pipelined ring paths).
size_t draw_count(std::mt19937_64 &g, size_t max_count) {
  const unsigned bucket = g() % 100;
  const size_t hi = bucket < 50 ? 16 : bucket < 85 ? 1024 : bucket < 98 ? 16384 : max_count;
  return g() % (std::min(hi, max_count) + 1);
}

Case draw_case(std::mt19937_64 &g, const Options &o, int size) {
  Case c;
  c.kind = static_cast<Kind>(g() % 7);
  c.dtype = static_cast<cohort_dtype_t>(g() % COHORT_NUM_DTYPES);
  c.op = reduces(c.kind) ? static_cast<cohort_op_t>(g() % COHORT_NUM_OPS) : COHORT_SUM;
  c.count = draw_count(g, o.max_count);
  if (c.kind == kAllgather || c.kind == kReduceScatter || c.kind == kAlltoall) {
    c.count /= size;  // a block per rank
  }
  c.root = static_cast<int>(g() % size);
  c.in_place = g() % 2 == 1;
  return c;
}

bool is_signed(cohort_dtype_t t) {
  return t != COHORT_UINT8 && t != COHORT_UINT32 && t != COHORT_UINT64;
}

// Exact everywhere: |sum| <= 8 * ranks, products of {1, 2} <= 2^ranks (int8 wraps alike).
double draw_value(std::mt19937_64 &g, const Case &c) {
  if (c.op == COHORT_PROD) return 1 + static_cast<double>(g() % 2);
  const double v = static_cast<double>(g() % 9);
  return is_signed(c.dtype) ? v - 4 : v;
}

// fp16 and bf16 have no MPI type: the oracle reduces them widened to float.
bool widened(cohort_dtype_t t) { return t == COHORT_FLOAT16 || t == COHORT_BFLOAT16; }

// Cohort's mapping (cohort_dtype_to_mpi), float for the widened types.
MPI_Datatype mpi_type(cohort_dtype_t t) {
  if (widened(t)) return MPI_FLOAT;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  cohort_dtype_to_mpi(t, &type);
  return type;
}

// Cohort's mapping (cohort_op_to_mpi); avg, which MPI lacks, is MPI's sum divided afterwards.
MPI_Op mpi_op(cohort_op_t op) {
  if (op == COHORT_AVG) return MPI_SUM;
  MPI_Op mpi = MPI_OP_NULL;
  cohort_op_to_mpi(op, &mpi);
  return mpi;
}

// The oracle's copy of a buffer in the type MPI reduces (fp16 / bf16 as float).
std::vector<char> widen(cohort_dtype_t t, const std::vector<char> &in, size_t n) {
  if (!widened(t)) return in;
  std::vector<char> out(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) store(COHORT_FLOAT32, out.data(), i, load(t, in.data(), i));
  return out;
}

struct Buffers {
  std::vector<char> in;   // this rank's input (in_n elements)
  std::vector<char> out;  // guard + output region + guard
  size_t in_n = 0, out_n = 0, elem = 0;
  size_t region_bytes() const { return std::max(in_n, out_n) * elem; }
  char *region() { return out.data() + kGuard; }
};

// Elements in and out of one rank for case c.
void sizes(const Case &c, int size, size_t *in_n, size_t *out_n) {
  const bool blocks_in = c.kind == kReduceScatter || c.kind == kAlltoall;
  const bool blocks_out = c.kind == kAllgather || c.kind == kAlltoall;
  *in_n = blocks_in ? c.count * size : c.count;
  *out_n = blocks_out ? c.count * size : c.count;
}

// Device copies of a case's buffers (allocated once, for the largest case) and the streams.
struct Device {
  mpi_test::CudaDriver driver;
  char *in = nullptr;
  char *out = nullptr;
  int32_t *chaser = nullptr;  // kChaser elements; with --graph, kChaser more for the stream
  std::vector<void *> streams;
  long calls = 0;
  int graph = 0;  // --graph N
};

cohort_status_t call_cohort(cohort_team_t team, const Case &c, const void *send, void *recv,
                            void *stream) {
  if (stream != nullptr) {
    switch (c.kind) {
      case kAllreduce:
        return cohort_allreduce_stream(team, send, recv, c.count, c.dtype, c.op, stream);
      case kReduce:
        return cohort_reduce_stream(team, send, recv, c.count, c.dtype, c.op, c.root, stream);
      case kBroadcast:
        return cohort_broadcast_stream(team, send, recv, c.count, c.dtype, c.root, stream);
      case kAllgather: return cohort_allgather_stream(team, send, recv, c.count, c.dtype, stream);
      case kReduceScatter:
        return cohort_reduce_scatter_stream(team, send, recv, c.count, c.dtype, c.op, stream);
      case kAlltoall: return cohort_alltoall_stream(team, send, recv, c.count, c.dtype, stream);
      case kBarrier: return cohort_barrier_stream(team, stream);
    }
  }
  switch (c.kind) {
    case kAllreduce: return cohort_allreduce(team, send, recv, c.count, c.dtype, c.op);
    case kReduce: return cohort_reduce(team, send, recv, c.count, c.dtype, c.op, c.root);
    case kBroadcast: return cohort_broadcast(team, send, recv, c.count, c.dtype, c.root);
    case kAllgather: return cohort_allgather(team, send, recv, c.count, c.dtype);
    case kReduceScatter: return cohort_reduce_scatter(team, send, recv, c.count, c.dtype, c.op);
    case kAlltoall: return cohort_alltoall(team, send, recv, c.count, c.dtype);
    case kBarrier: return cohort_barrier(team);
  }
  return COHORT_ERR_INTERNAL;
}

constexpr int kChaser = 5;

// A blocking allreduce of kChaser int32 (rank + i + call, summed) on the device, issued while a
// stream-ordered call may still be on its stream; false (and a message) on a wrong result.
bool chase(cohort_team_t team, Device &d, int rank) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int32_t values[kChaser], sums[kChaser];
  for (int i = 0; i < kChaser; ++i) values[i] = rank + i + static_cast<int32_t>(d.calls);
  cohort_status_t s = cohort_memcpy(d.chaser, values, sizeof values);
  if (s == COHORT_SUCCESS) {
    s = cohort_allreduce(team, d.chaser, d.chaser, kChaser, COHORT_INT32, COHORT_SUM);
  }
  if (s == COHORT_SUCCESS) s = cohort_memcpy(sums, d.chaser, sizeof sums);
  for (int i = 0; i < kChaser && s == COHORT_SUCCESS; ++i) {
    const int32_t want = size * (size - 1) / 2 + size * (i + static_cast<int32_t>(d.calls));
    if (sums[i] == want) continue;
    std::printf(
        "rank %d: the blocking allreduce chasing stream call %ld: element %d is %d, not %d\n", rank,
        d.calls, i, sums[i], want);
    return false;
  }
  if (s != COHORT_SUCCESS)
    std::printf("rank %d: the chasing allreduce failed: %s\n", rank, cohort_last_error());
  return s == COHORT_SUCCESS;
}

// Stream-ordered calls on host memory, alone or beside device memory, are refused alike on
// every rank with COHORT_ERR_INVALID_ARG naming the buffer (cohort.h), and queue nothing: the
// random cases after them run on the same team.  Returns the calls that went otherwise.
long stream_kinds_refused(cohort_team_t team, Device &d, int rank) {
  std::vector<char> host(64 * sizeof(double));
  struct Mix {
    Kind kind;
    bool host_send;  // else the receive buffer is the host's (each used on every rank)
  };
  const Mix mixes[] = {{kAllreduce, true},     {kAllreduce, false},     {kReduce, true},
                       {kBroadcast, false},    {kAllgather, true},      {kAllgather, false},
                       {kReduceScatter, true}, {kReduceScatter, false}, {kAlltoall, true},
                       {kAlltoall, false}};
  long wrong = 0;
  for (const Mix &m : mixes) {
    const Case c{m.kind, COHORT_FLOAT32, COHORT_SUM, 2, 0, false};
    const void *send = m.host_send ? static_cast<void *>(host.data()) : d.in;
    void *recv = m.host_send ? static_cast<void *>(d.out) : host.data();
    const cohort_status_t s = call_cohort(team, c, send, recv, d.streams[0]);
    const char *named = m.host_send ? "sendbuf is host memory" : "recvbuf is host memory";
    if (s == COHORT_ERR_INVALID_ARG && std::strstr(cohort_last_error(), named) != nullptr) continue;
    ++wrong;
    std::fprintf(stderr, "[rank %d] %s_stream with a host %s: %s: %s\n", rank,
                 kKindNames[m.kind], m.host_send ? "sendbuf" : "recvbuf", cohort_status_string(s),
                 cohort_last_error());
  }
  return wrong;
}

// The stream-ordered allreduce behind replay `replay` (of rank + i + 7 * replay) summed right.
bool stream_chaser_right(Device &d, int replay, int rank) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int32_t sums[kChaser];
  if (cohort_memcpy(sums, d.chaser + kChaser, sizeof sums) != COHORT_SUCCESS) return false;
  for (int i = 0; i < kChaser; ++i) {
    const int32_t want = size * (size - 1) / 2 + size * (i + 7 * replay);
    if (sums[i] == want) continue;
    std::printf("rank %d: the stream allreduce behind replay %d: element %d is %d, not %d\n", rank,
                replay, i, sums[i], want);
    return false;
  }
  return true;
}

// --graph: the call captured on `stream` once, then replayed d.graph times (see the top).
cohort_status_t replay_on_device(cohort_team_t team, const Case &c, Buffers &b, const void *send,
                                 void *recv, Device &d, int rank, void *stream) {
  mpi_test::CudaDriver &drv = d.driver;
  void *graph = nullptr, *exec = nullptr;
  if (drv.begin_capture(stream, mpi_test::CudaDriver::kCaptureThreadLocal) != 0) {
    return COHORT_ERR_CUDA;
  }
  cohort_status_t s = call_cohort(team, c, send, recv, stream);
  const int ended = drv.end_capture(stream, &graph);
  if (s == COHORT_SUCCESS && (ended != 0 || drv.instantiate(&exec, graph, 0) != 0)) {
    s = COHORT_ERR_CUDA;
  }
  if (graph != nullptr) drv.graph_destroy(graph);  // the instance keeps what it needs
  const std::vector<char> initial = b.out;         // the in-place inputs live there
  std::vector<char> first;
  for (int r = 0; r < d.graph && s == COHORT_SUCCESS; ++r) {
    s = cohort_memcpy(d.in, b.in.data(), b.in.size());
    if (s == COHORT_SUCCESS) s = cohort_memcpy(d.out, initial.data(), initial.size());
    const int32_t *chaser = d.chaser + kChaser;
    int32_t values[kChaser];
    for (int i = 0; i < kChaser; ++i) values[i] = rank + i + 7 * r;
    if (s == COHORT_SUCCESS) s = cohort_memcpy(d.chaser + kChaser, values, sizeof values);
    if (s == COHORT_SUCCESS && drv.launch(exec, stream) != 0) s = COHORT_ERR_CUDA;
    if (s == COHORT_SUCCESS) {
      s = cohort_allreduce_stream(team, chaser, d.chaser + kChaser, kChaser, COHORT_INT32,
                                  COHORT_SUM, stream);
    }
    if (s == COHORT_SUCCESS && r % 2 == 1 && !chase(team, d, rank)) s = COHORT_ERR_INTERNAL;
    if (s == COHORT_SUCCESS && drv.stream_sync(stream) != 0) s = COHORT_ERR_CUDA;
    if (s == COHORT_SUCCESS && !stream_chaser_right(d, r, rank)) s = COHORT_ERR_INTERNAL;
    if (s == COHORT_SUCCESS) s = cohort_memcpy(b.out.data(), d.out, b.out.size());
    if (s == COHORT_SUCCESS && r == 0) first = b.out;
    if (s == COHORT_SUCCESS && b.out != first) {
      size_t at = 0;
      while (b.out[at] == first[at]) ++at;
      std::printf(
          "rank %d: replay %d of a captured %s (count %zu, root %d) gave another output "
          "than the first: byte %zu of %zu is %d, was %d\n",
          rank, r, kKindNames[c.kind], c.count, c.root, at, b.out.size(), b.out[at], first[at]);
      s = COHORT_ERR_INTERNAL;
    }
  }
  if (exec != nullptr) drv.exec_destroy(exec);
  return s;
}

// --graph: an allreduce captured on a team of its own and replayed after that team was
// destroyed runs nothing, but its stream must go on (the fake driver aborts a stream that
// waits 300 s; a real one would hang until the run's limit).
bool replay_after_destroy(Device &d, int rank) {
  cohort_team_t team = nullptr;
  if (cohort_team_create_mpi(MPI_COMM_WORLD, nullptr, &team) != COHORT_SUCCESS) return false;
  void *stream = d.streams[0], *graph = nullptr, *exec = nullptr;
  bool ok = d.driver.begin_capture(stream, mpi_test::CudaDriver::kCaptureThreadLocal) == 0;
  const cohort_status_t s =
      cohort_allreduce_stream(team, d.chaser, d.chaser, kChaser, COHORT_INT32, COHORT_SUM, stream);
  ok = d.driver.end_capture(stream, &graph) == 0 && ok && s == COHORT_SUCCESS &&
       d.driver.instantiate(&exec, graph, 0) == 0;
  if (graph != nullptr) d.driver.graph_destroy(graph);
  ok = cohort_team_destroy(team) == COHORT_SUCCESS && ok;
  ok = ok && d.driver.launch(exec, stream) == 0 && d.driver.stream_sync(stream) == 0;
  if (exec != nullptr) d.driver.exec_destroy(exec);
  if (!ok)
    std::printf("rank %d: a replay after its team was destroyed: %s\n", rank,
                s == COHORT_SUCCESS ? "a CUDA call failed" : cohort_last_error());
  return ok;
}

// The call on device copies of the host buffers (same offsets), then the results copied back.
cohort_status_t run_on_device(cohort_team_t team, const Case &c, Buffers &b, const void *send,
                              void *recv, Device &d, int rank) {
  auto moved = [&](const void *p) -> char * {
    const char *q = static_cast<const char *>(p);
    if (q >= b.in.data() && q < b.in.data() + b.in.size()) return d.in + (q - b.in.data());
    return d.out + (q - b.out.data());
  };
  cohort_status_t s = cohort_memcpy(d.in, b.in.data(), b.in.size());
  if (s == COHORT_SUCCESS) s = cohort_memcpy(d.out, b.out.data(), b.out.size());
  if (s != COHORT_SUCCESS) return s;
  void *stream = d.streams.empty() ? nullptr : d.streams[d.calls++ % d.streams.size()];
  if (stream != nullptr && d.graph > 0) {
    return replay_on_device(team, c, b, moved(send), moved(recv), d, rank, stream);
  }
  s = call_cohort(team, c, moved(send), moved(recv), stream);
  if (s == COHORT_SUCCESS && stream != nullptr && d.calls % 2 == 0 && !chase(team, d, rank)) {
    return COHORT_ERR_INTERNAL;
  }
  if (s == COHORT_SUCCESS && stream != nullptr && d.driver.stream_sync(stream) != 0) {
    return COHORT_ERR_CUDA;
  }
  if (s == COHORT_SUCCESS) s = cohort_memcpy(b.out.data(), d.out, b.out.size());
  return s;
}

cohort_status_t run_cohort(cohort_team_t team, const Case &c, Buffers &b, int rank,
                           Device *device) {
  const size_t e = b.elem;
  char *region = b.region();
  const void *send = b.in.data();
  void *recv = region;
  if (c.in_place) {  // NCCL's conventions: the output buffer, or the rank's block of it
    if (c.kind == kAllgather) {
      std::memcpy(region + rank * c.count * e, b.in.data(), c.count * e);
      send = region + rank * c.count * e;
    } else if (c.kind == kReduceScatter) {
      // The output is the rank's block of the input, which lives in the guarded region.
      std::memcpy(region, b.in.data(), b.in_n * e);
      send = region;
      recv = region + rank * c.count * e;
    } else if (c.kind != kBarrier && (c.kind != kReduce || rank == c.root)) {
      std::memcpy(region, b.in.data(), b.in_n * e);
      send = region;
    }
  }
  if (device != nullptr) return run_on_device(team, c, b, send, recv, *device, rank);
  return call_cohort(team, c, send, recv, nullptr);
}

// MPI's result for this rank (as doubles), or empty when this rank has none.
std::vector<double> run_oracle(const Case &c, const Buffers &b, int rank, int size) {
  if (c.kind == kBarrier || (c.kind == kReduce && rank != c.root)) {
    if (c.kind == kReduce) {
      std::vector<char> wide = widen(c.dtype, b.in, b.in_n);
      MPI_Reduce(wide.data(), nullptr, static_cast<int>(c.count), mpi_type(c.dtype), mpi_op(c.op),
                 c.root, MPI_COMM_WORLD);
    }
    return {};
  }
  const MPI_Datatype type = mpi_type(c.dtype);
  const size_t wide_elem = widened(c.dtype) ? sizeof(float) : b.elem;
  std::vector<char> wide = widen(c.dtype, b.in, b.in_n);
  std::vector<char> result(std::max<size_t>(b.out_n, 1) * wide_elem);
  const int n = static_cast<int>(c.count);
  switch (c.kind) {
    case kAllreduce:
      MPI_Allreduce(wide.data(), result.data(), n, type, mpi_op(c.op), MPI_COMM_WORLD);
      break;
    case kReduce:
      MPI_Reduce(wide.data(), result.data(), n, type, mpi_op(c.op), c.root, MPI_COMM_WORLD);
      break;
    case kBroadcast:
      if (rank == c.root && c.count > 0)
        std::memcpy(result.data(), wide.data(), c.count * wide_elem);
      MPI_Bcast(result.data(), n, type, c.root, MPI_COMM_WORLD);
      break;
    case kAllgather:
      MPI_Allgather(wide.data(), n, type, result.data(), n, type, MPI_COMM_WORLD);
      break;
    case kReduceScatter:
      MPI_Reduce_scatter_block(wide.data(), result.data(), n, type, mpi_op(c.op), MPI_COMM_WORLD);
      break;
    case kAlltoall:
      MPI_Alltoall(wide.data(), n, type, result.data(), n, type, MPI_COMM_WORLD);
      break;
    case kBarrier: break;
  }
  const cohort_dtype_t wide_type = wide_elem == b.elem ? c.dtype : COHORT_FLOAT32;
  std::vector<double> values(b.out_n);
  for (size_t i = 0; i < b.out_n; ++i) {
    double v = load(wide_type, result.data(), i);
    if (c.op == COHORT_AVG && reduces(c.kind))
      v = is_float(c.dtype) ? v / size : std::trunc(v / size);
    values[i] = v;
  }
  return values;
}

bool equal(const Case &c, double got, double want) {
  if (!(c.op == COHORT_AVG && is_float(c.dtype))) return got == want;
  const double tolerance = c.dtype == COHORT_FLOAT16 || c.dtype == COHORT_BFLOAT16 ? 1e-2
                           : c.dtype == COHORT_FLOAT32                             ? 1e-6
                                                                                   : 1e-12;
  return std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
}

// Wrong elements and touched guard bytes of one case on this rank (the first few printed).
long check_case(const Case &c, Buffers &b, const std::vector<double> &want, int rank, long iter,
                long *reported) {
  long bad = 0;
  auto report = [&](const char *what, size_t i, double got, double expected) {
    if ((*reported)++ < 10) {
      std::fprintf(stderr,
                   "[rank %d] case %ld: %s dtype %d op %d count %zu root %d%s: %s %zu: got %g, "
                   "expected %g\n",
                   rank, iter, kKindNames[c.kind], c.dtype, c.op, c.count, c.root,
                   c.in_place ? " in place" : "", what, i, got, expected);
    }
  };
  for (size_t i = 0; i < kGuard; ++i) {
    const unsigned char before = b.out[i], after = b.out[kGuard + b.region_bytes() + i];
    if (before != kGuardByte || after != kGuardByte) {
      ++bad;
      report("guard byte", i, before != kGuardByte ? before : after, kGuardByte);
    }
  }
  const char *result = b.region();
  if (c.kind == kReduceScatter && c.in_place) result += rank * c.count * b.elem;
  if (want.empty()) {  // no output here: a non-root's buffer must be as it was
    if (c.kind == kReduce) {
      for (size_t i = 0; i < b.region_bytes(); ++i) {
        if (static_cast<unsigned char>(result[i]) != kGuardByte) {
          ++bad;
          report("non-root output byte", i, static_cast<unsigned char>(result[i]), kGuardByte);
        }
      }
    }
    return bad;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = load(c.dtype, result, i);
    if (!equal(c, got, want[i])) {
      ++bad;
      report("element", i, got, want[i]);
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Options o = mpi_test::parse_random_options(argc, argv, "coll_random", 100000);
  mpi_test::place_on_fake_host(o, rank, "random-node-");
  long mismatches = 0, failures = 0, reported = 0;
  Device device;
  if (o.device || o.streams > 0) {
    const size_t bytes = std::max<size_t>(o.max_count, 1) * sizeof(double) + 2 * kGuard;
    bool ok = device.driver.start() &&
              cohort_device_alloc(bytes, reinterpret_cast<void **>(&device.in)) == 0 &&
              cohort_device_alloc(bytes, reinterpret_cast<void **>(&device.out)) == 0 &&
              cohort_device_alloc(2 * kChaser * sizeof(int32_t),
                                  reinterpret_cast<void **>(&device.chaser)) == 0;
    device.graph = o.graph;
    if (o.graph > 0 && (o.streams == 0 || !device.driver.graphs())) ok = false;
    for (int i = 0; ok && i < o.streams; ++i) {
      device.streams.push_back(device.driver.new_stream());
      ok = device.streams.back() != nullptr;
    }
    int everywhere = 0, mine = ok ? 1 : 0;
    MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {  // exit 77: a skip
      if (rank == 0)
        std::printf("SKIP: no CUDA device (or driver; with --graph, graphs) on some rank\n");
      MPI_Finalize();
      return 77;
    }
  }
  const double t0 = MPI_Wtime();
  {
    cohort::Team team(MPI_COMM_WORLD);
    std::mt19937_64 shared(o.seed);                                     // same on every rank
    std::mt19937_64 values(o.seed * 0x9E3779B97F4A7C15ull + rank + 1);  // this rank's inputs
    int threads_before = -1;  // after the first case: the progress engine runs by then
    if (o.streams > 0) failures += stream_kinds_refused(team.get(), device, rank);
    for (long iter = 0; iter < o.iters; ++iter) {
      if (iter == 1) threads_before = mpi_test::thread_count();
      const Case c = draw_case(shared, o, size);
      Buffers b;
      b.elem = elem_bytes(c.dtype);
      sizes(c, size, &b.in_n, &b.out_n);
      b.in.resize(std::max<size_t>(b.in_n, 1) * b.elem);
      for (size_t i = 0; i < b.in_n; ++i) store(c.dtype, b.in.data(), i, draw_value(values, c));
      b.out.assign(2 * kGuard + b.region_bytes(), static_cast<char>(kGuardByte));
      cohort_status_t s =
          run_cohort(team.get(), c, b, rank, o.device || o.streams > 0 ? &device : nullptr);
      if (s != COHORT_SUCCESS) {
        if (failures++ < 10) {
          std::fprintf(stderr, "[rank %d] case %ld: %s count %zu: %s: %s\n", rank, iter,
                       kKindNames[c.kind], c.count, cohort_status_string(s), cohort_last_error());
        }
      }
      const std::vector<double> want = run_oracle(c, b, rank, size);
      if (s == COHORT_SUCCESS) mismatches += check_case(c, b, want, rank, iter, &reported);
      if (rank == 0 && o.iters >= 10 && (iter + 1) % (o.iters / 10) == 0) {
        std::fprintf(stderr, "coll_random: %ld of %ld\n", iter + 1, o.iters);
      }
    }
    // Stream calls start and stop the progress engine's polling: never another thread.
    const int threads_after = mpi_test::thread_count();
    if (threads_before >= 0 && threads_after > threads_before + 1) {
      ++failures;
      std::fprintf(stderr, "[rank %d] %d threads after the first case, %d after the last\n", rank,
                   threads_before, threads_after);
    }
    if (o.graph > 0 && !replay_after_destroy(device, rank)) ++failures;
  }
  long totals[2] = {mismatches, failures};
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf(
        "coll_random: %ld collectives on %d ranks, %ld mismatches, %ld failed calls, %.1f s\n",
        o.iters, size, totals[0], totals[1], MPI_Wtime() - t0);
  }
  MPI_Finalize();
  return totals[0] == 0 && totals[1] == 0 ? 0 : 1;
}
