// Broadcast, reduce, allgather, reduce-scatter, alltoall and barrier on GPU device memory
// (gpu_test.cc runs these scenarios): each result against the host path's on the same
// inputs, in and out of place, blocking, stream-ordered and replayed from a CUDA graph; and
// a run of mixed collectives enqueued back to back, which must share the team's windows.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "gpu_support.h"

namespace mpi_test {
namespace {

enum class Kind { kBroadcast, kReduce, kAllgather, kReduceScatter, kAlltoall, kBarrier };
const char *const kKindNames[] = {"broadcast",      "reduce",   "allgather",
                                  "reduce_scatter", "alltoall", "barrier"};

struct Call {
  Kind kind = Kind::kBroadcast;
  cohort_dtype_t dtype = COHORT_FLOAT32;
  cohort_op_t op = COHORT_SUM;
  size_t count = 0;  // cohort.h's count
  int root = 0;
};

bool reduces(Kind k) { return k == Kind::kReduce || k == Kind::kReduceScatter; }

// Elements of each rank's input and output buffers.
size_t input_elems(const Call &c) {
  const bool blocks = c.kind == Kind::kReduceScatter || c.kind == Kind::kAlltoall;
  return blocks ? c.count * g_size : c.count;
}
size_t output_elems(const Call &c) {
  const bool blocks = c.kind == Kind::kAllgather || c.kind == Kind::kAlltoall;
  return blocks ? c.count * g_size : c.count;
}

// In place as cohort.h says: where this rank's input lies in its output buffer (elements),
// or in its input buffer where the output lies (reduce-scatter).
size_t in_place_offset(const Call &c) {
  if (c.kind == Kind::kAllgather || c.kind == Kind::kReduceScatter) {
    return c.count * static_cast<size_t>(g_rank);
  }
  return 0;
}

// Whether this rank's output holds a result to compare.
bool has_output(const Call &c) {
  return c.kind != Kind::kBarrier && (c.kind != Kind::kReduce || g_rank == c.root);
}

// The call on `stream` (null: the blocking form).
cohort_status_t issue(cohort_team_t team, const Call &c, const void *src, void *dst,
                      cudaStream_t stream, bool on_stream) {
  switch (c.kind) {
    case Kind::kBroadcast:
      return on_stream ? cohort_broadcast_stream(team, src, dst, c.count, c.dtype, c.root, stream)
                       : cohort_broadcast(team, src, dst, c.count, c.dtype, c.root);
    case Kind::kReduce:
      return on_stream
                 ? cohort_reduce_stream(team, src, dst, c.count, c.dtype, c.op, c.root, stream)
                 : cohort_reduce(team, src, dst, c.count, c.dtype, c.op, c.root);
    case Kind::kAllgather:
      return on_stream ? cohort_allgather_stream(team, src, dst, c.count, c.dtype, stream)
                       : cohort_allgather(team, src, dst, c.count, c.dtype);
    case Kind::kReduceScatter:
      return on_stream
                 ? cohort_reduce_scatter_stream(team, src, dst, c.count, c.dtype, c.op, stream)
                 : cohort_reduce_scatter(team, src, dst, c.count, c.dtype, c.op);
    case Kind::kAlltoall:
      return on_stream ? cohort_alltoall_stream(team, src, dst, c.count, c.dtype, stream)
                       : cohort_alltoall(team, src, dst, c.count, c.dtype);
    case Kind::kBarrier:
      return on_stream ? cohort_barrier_stream(team, stream) : cohort_barrier(team);
  }
  return COHORT_ERR_INVALID_ARG;
}

std::string describe(const Call &c, bool in_place, Mode mode) {
  char text[200];
  snprintf(text, sizeof(text), "%s %s%s%s count %zu root %d %s %s", kKindNames[int(c.kind)],
           kDtypeNames[c.dtype], reduces(c.kind) ? " " : "", reduces(c.kind) ? kOpNames[c.op] : "",
           c.count, c.root, in_place ? "in place" : "out of place", mode_name(mode));
  return text;
}

// This rank's input of call number `seed`.
std::vector<char> make_input(const Call &c, int seed) {
  std::vector<char> in(input_elems(c) * elem_bytes(c.dtype) + 1);
  for (size_t i = 0; i < input_elems(c); ++i) {
    store(c.dtype, in.data(), i, input(c.dtype, c.op, g_rank + seed, i));
  }
  return in;
}

// The host path's result of `c` on `in` (the output buffer's whole contents).
std::vector<char> host_result(cohort_team_t team, const Call &c, const std::vector<char> &in) {
  std::vector<char> want(output_elems(c) * elem_bytes(c.dtype) + 1);
  CHECK_STATUS(issue(team, c, in.data(), want.data(), nullptr, false), COHORT_SUCCESS);
  return want;
}

// Device buffers of one call: the input, and the output (the input's buffer in place, with
// the offsets cohort.h gives).
// With --register, both allocations are registered with the team for the buffers' life.
struct DeviceBuffers {
  void *in_base = nullptr, *out_base = nullptr;
  void *src = nullptr, *dst = nullptr;
  size_t out_bytes = 0;
  std::unique_ptr<CaseRegistration> registration;
  DeviceBuffers(cohort_team_t team, const Call &c, const std::vector<char> &in, bool in_place) {
    const size_t elem = elem_bytes(c.dtype);
    const size_t in_bytes = input_elems(c) * elem;
    out_bytes = output_elems(c) * elem;
    // --offset K: buffers start K elements past an allocation (not 16-byte aligned).
    const size_t shift = static_cast<size_t>(opt_int("offset", 0)) * elem;
    const size_t room = std::max(in_bytes, out_bytes) + 16 + shift;
    CUDA_OK(cudaMalloc(&in_base, room));
    CUDA_OK(cudaMemset(in_base, 0xee, room));
    char *in_start = static_cast<char *>(in_base) + shift;
    if (in_place && c.kind == Kind::kAllgather) {
      // The input is this rank's block of the output.
      dst = in_start;
      src = in_start + in_place_offset(c) * elem;
    } else if (in_place) {
      src = in_start;
      dst = in_start + in_place_offset(c) * elem;
    } else {
      CUDA_OK(cudaMalloc(&out_base, out_bytes + 16 + shift));
      CUDA_OK(cudaMemset(out_base, 0xee, out_bytes + 16 + shift));
      src = in_start;
      dst = static_cast<char *>(out_base) + shift;
    }
    CUDA_OK(cudaMemcpy(src, in.data(), in_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    // The same number of registrations on every rank: an in-place call's one buffer twice.
    const size_t out_room = out_base ? out_bytes + 16 + shift : room;
    registration = std::make_unique<CaseRegistration>(
        team, std::vector<std::pair<void *, size_t>>{{in_base, room},
                                                     {out_base ? out_base : in_base, out_room}});
  }
  ~DeviceBuffers() {
    registration.reset();
    cudaFree(in_base);
    cudaFree(out_base);
  }
  DeviceBuffers(const DeviceBuffers &) = delete;
  DeviceBuffers &operator=(const DeviceBuffers &) = delete;
};

// Runs `c` on the device in `mode`; false when a call failed (a check reported it).
bool run_on_device(cohort_team_t team, const Call &c, const DeviceBuffers &b, Mode mode,
                   cudaStream_t stream) {
  if (mode != Mode::kGraph) {
    cohort_status_t s = issue(team, c, b.src, b.dst, stream, mode == Mode::kStream);
    CHECK(s == COHORT_SUCCESS, "%s: %s", kKindNames[int(c.kind)], cohort_last_error());
    if (mode == Mode::kStream) CUDA_OK(cudaStreamSynchronize(stream));
    return s == COHORT_SUCCESS;
  }
  // Captured once, replayed three times (out of place: each replay gives the same result).
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cohort_status_t s = issue(team, c, b.src, b.dst, stream, true);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CHECK(s == COHORT_SUCCESS, "%s (captured): %s", kKindNames[int(c.kind)], cohort_last_error());
  if (s != COHORT_SUCCESS || graph == nullptr) return false;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return true;
}

// The device's output against the host path's, and the 16 bytes past it untouched.
void check_output(const Call &c, const DeviceBuffers &b, const std::vector<char> &want,
                  const std::string &what) {
  if (!has_output(c)) return;
  std::vector<char> got(b.out_bytes + 1);
  CUDA_OK(cudaMemcpy(got.data(), b.dst, b.out_bytes, cudaMemcpyDeviceToHost));
  compare(what.c_str(), c.dtype, got, want, output_elems(c));
  if (b.out_base == nullptr) return;  // in place: the input's own bytes may follow
  unsigned char guard[16];
  CUDA_OK(cudaMemcpy(guard, static_cast<char *>(b.dst) + b.out_bytes, 16, cudaMemcpyDeviceToHost));
  for (unsigned char g : guard)
    CHECK(g == 0xee, "%s: a byte past the output changed", what.c_str());
}

void check_case(cohort_team_t team, const Call &c, bool in_place, Mode mode, cudaStream_t stream) {
  const std::vector<char> in = make_input(c, 0);
  const std::vector<char> want = host_result(team, c, in);
  DeviceBuffers buffers(team, c, in, in_place);
  const std::string what = describe(c, in_place, mode);
  if (run_on_device(team, c, buffers, mode, stream)) check_output(c, buffers, want, what);
}

// Every collective but allreduce x dtype x op (the reductions) x count x in place x mode.
void run_matrix(cohort_team_t team, cudaStream_t stream, int *cases) {
  const bool quick = opt_int("quick", 0) != 0;
  std::vector<size_t> counts = {0, 1, 7, 1023, 65537};
  if (!quick) counts.push_back(size_t{1} << 20);
  for (Kind kind :
       {Kind::kBroadcast, Kind::kReduce, Kind::kAllgather, Kind::kReduceScatter, Kind::kAlltoall}) {
    for (cohort_dtype_t t : kDtypes) {
      for (cohort_op_t op : kOps) {
        if (!reduces(kind) && op != COHORT_SUM) continue;
        for (size_t count : counts) {
          Call c{kind, t, op, count, static_cast<int>(count % static_cast<size_t>(g_size))};
          for (bool in_place : {false, true}) {
            for (Mode mode : {Mode::kBlocking, Mode::kStream, Mode::kGraph}) {
              if (mode == Mode::kGraph && in_place) continue;
              check_case(team, c, in_place, mode, stream);
              ++*cases;
            }
          }
        }
      }
    }
  }
}

// Barriers on a stream: rank r's kernel that follows the barrier must not start before every
// rank's work before it ended.  Each rank sleeps a different time on the GPU before its
// barrier, then records an event; every event follows the slowest rank's sleep.
void check_barriers(cohort_team_t team, cudaStream_t stream, int *cases) {
  for (Mode mode : {Mode::kBlocking, Mode::kStream}) {
    Call c{Kind::kBarrier, COHORT_INT8, COHORT_SUM, 0, 0};
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_s();
    if (g_rank == 0) usleep(200000);
    cohort_status_t s = issue(team, c, nullptr, nullptr, stream, mode == Mode::kStream);
    CHECK(s == COHORT_SUCCESS, "barrier %s: %s", mode_name(mode), cohort_last_error());
    CUDA_OK(cudaStreamSynchronize(stream));
    const double took = now_s() - start;
    CHECK(took >= 0.19,
          "barrier %s: rank %d passed it %.3f s after the start, before rank 0 "
          "(0.2 s late) got there",
          mode_name(mode), g_rank, took);
    ++*cases;
  }
}

}  // namespace

void collective_matrix() {
  cohort_team_t team = gpu_team();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int cases = 0;
  run_matrix(team, stream, &cases);
  check_barriers(team, stream, &cases);
  if (g_rank == 0) printf("collectives: %d cases on the GPU against the host path\n", cases);
  cudaStreamDestroy(stream);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// Collectives of every kind and size enqueued back to back on one stream (some blocking),
// with random host delays between them, checked at the end: a kernel of one kind must never
// overwrite what a peer's kernel of the previous call still reads.
void mixed_calls() {
  cohort_team_t team = gpu_team();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int calls = opt_int("calls", 60);
  const size_t sizes[] = {1, 7, 4096, 16384, 65537, 300000};
  const cohort_dtype_t dtypes[] = {COHORT_FLOAT32, COHORT_BFLOAT16, COHORT_INT8, COHORT_FLOAT64};
  srand(4321);  // the same calls on every rank
  struct Run {
    Call call;
    bool in_place = false;
    std::vector<char> want;
    std::unique_ptr<DeviceBuffers> buffers;
  };
  std::vector<Run> runs(calls);
  for (int i = 0; i < calls; ++i) {
    Run &r = runs[i];
    r.call.kind = static_cast<Kind>(rand() % 5);
    r.call.dtype = dtypes[rand() % 4];
    r.call.op = kOps[rand() % 5];
    r.call.count = sizes[rand() % 6];
    r.call.root = rand() % g_size;
    const std::vector<char> in = make_input(r.call, i);
    r.want = host_result(team, r.call, in);
    r.in_place = rand() % 3 == 0;
    r.buffers = std::make_unique<DeviceBuffers>(team, r.call, in, r.in_place);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  srand(99 + g_rank);  // delays differ between ranks
  for (int i = 0; i < calls; ++i) {
    if (rand() % 4 == 0) usleep(rand() % 2000);
    const Run &r = runs[i];
    cohort_status_t s = issue(team, r.call, r.buffers->src, r.buffers->dst, stream, i % 9 != 8);
    CHECK(s == COHORT_SUCCESS, "call %d (%s): %s", i, kKindNames[int(r.call.kind)],
          cohort_last_error());
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  for (int i = 0; i < calls; ++i) {
    const Run &r = runs[i];
    check_output(r.call, *r.buffers, r.want,
                 "call " + std::to_string(i) + ": " + describe(r.call, r.in_place, Mode::kStream));
  }
  if (g_rank == 0) printf("mixed: %d calls of every kind in flight\n", calls);
  runs.clear();
  cudaStreamDestroy(stream);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

}  // namespace mpi_test
