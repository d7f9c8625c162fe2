// Collectives on GPU device memory among the ranks of one host (several ranks may share a GPU
// under MPS): results against the host path's on the same inputs, eager (blocking and
// stream-ordered) and replayed from a CUDA graph; an abort and a missing rank end every
// rank's kernels with a named error.  Skips (exit 77) without a CUDA device.  Allreduce is
// here, the other collectives in gpu_colls.cc.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_support.h"

using namespace mpi_test;

namespace {

// One allreduce on the device in `mode`; false (with a failed check) when a call failed.
bool device_allreduce(cohort_team_t team, Mode mode, const void *src, void *dst, size_t count,
                      cohort_dtype_t t, cohort_op_t op, cudaStream_t stream) {
  if (mode == Mode::kBlocking) {
    cohort_status_t s = cohort_allreduce(team, src, dst, count, t, op);
    CHECK(s == COHORT_SUCCESS, "cohort_allreduce (device): %s", cohort_last_error());
    return s == COHORT_SUCCESS;
  }
  if (mode == Mode::kStream) {
    cohort_status_t s = cohort_allreduce_stream(team, src, dst, count, t, op, stream);
    CHECK(s == COHORT_SUCCESS, "cohort_allreduce_stream: %s", cohort_last_error());
    CUDA_OK(cudaStreamSynchronize(stream));
    return s == COHORT_SUCCESS;
  }
  // Captured once, replayed three times: the result of each replay is the same.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cohort_status_t s = cohort_allreduce_stream(team, src, dst, count, t, op, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CHECK(s == COHORT_SUCCESS, "cohort_allreduce_stream (captured): %s", cohort_last_error());
  if (s != COHORT_SUCCESS || graph == nullptr) return false;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return true;
}

// One case: the device result (in place or not, in `mode`) against the host path's.
void check_case(cohort_team_t team, cohort_dtype_t t, cohort_op_t op, size_t count, bool in_place,
                Mode mode, cudaStream_t stream) {
  const size_t bytes = count * elem_bytes(t);
  std::vector<char> in(bytes + 1), want(bytes + 1), got(bytes + 1);
  for (size_t i = 0; i < count; ++i) store(t, in.data(), i, input(t, op, g_rank, i));
  CHECK_STATUS(cohort_allreduce(team, in.data(), want.data(), count, t, op), COHORT_SUCCESS);
  // --offset K: both buffers start K elements past an allocation (not 16-byte aligned).
  const size_t offset = static_cast<size_t>(opt_int("offset", 0)) * elem_bytes(t);
  void *src_base = nullptr, *dst_base = nullptr;
  CUDA_OK(cudaMalloc(&src_base, bytes + 16 + offset));
  CUDA_OK(cudaMalloc(&dst_base, bytes + 16 + offset));
  void *src = static_cast<char *>(src_base) + offset;
  void *dst = static_cast<char *>(dst_base) + offset;
  void *target = in_place ? src : dst;
  CUDA_OK(cudaMemcpy(src, in.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dst_base, 0xee, bytes + 16 + offset));
  CUDA_OK(cudaDeviceSynchronize());  // the memset ran on the legacy stream, the test's does not
  char what[160];
  snprintf(what, sizeof(what), "allreduce %s %s count %zu %s %s", kDtypeNames[t], kOpNames[op],
           count, in_place ? "in place" : "out of place", mode_name(mode));
  {
    // Deregistered (its destructor) before the buffers are freed.
    CaseRegistration registration(
        team, {{src_base, bytes + 16 + offset}, {dst_base, bytes + 16 + offset}});
    if (device_allreduce(team, mode, src, target, count, t, op, stream)) {
      CUDA_OK(cudaMemcpy(got.data(), target, bytes, cudaMemcpyDeviceToHost));
      compare(what, t, got, want, count);
      // Nothing past the output is written.
      unsigned char guard[16];
      CUDA_OK(cudaMemcpy(guard, static_cast<char *>(target) + bytes, 16, cudaMemcpyDeviceToHost));
      if (!in_place) {
        for (unsigned char g : guard) CHECK(g == 0xee, "%s: a byte past the output changed", what);
      }
    }
  }
  cudaFree(src_base);
  cudaFree(dst_base);
}

void allreduce_matrix() {
  cohort_team_t team = gpu_team();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const bool quick = opt_int("quick", 0) != 0;
  std::vector<size_t> counts = {0, 1, 7, 1023, 65537};
  if (!quick) counts.push_back(size_t{1} << 20);
  int cases = 0;
  for (cohort_dtype_t t : kDtypes) {
    for (cohort_op_t op : kOps) {
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          for (Mode mode : {Mode::kBlocking, Mode::kStream, Mode::kGraph}) {
            // A replayed in-place allreduce reduces its own output again: out of place only.
            if (mode == Mode::kGraph && in_place) continue;
            check_case(team, t, op, count, in_place, mode, stream);
            ++cases;
          }
        }
      }
    }
  }
  // The largest messages, for the types people train with.
  if (!quick) {
    const size_t big = size_t{1} << opt_int("big-log2", 26);
    for (cohort_dtype_t t : {COHORT_FLOAT32, COHORT_BFLOAT16}) {
      for (Mode mode : {Mode::kBlocking, Mode::kStream}) {
        check_case(team, t, COHORT_SUM, big, false, mode, stream);
        check_case(team, t, COHORT_SUM, big, true, mode, stream);
        cases += 2;
      }
    }
  }
  if (g_rank == 0) printf("allreduce: %d cases on the GPU against the host path\n", cases);
  cudaStreamDestroy(stream);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// Calls in flight together: each rank enqueues a run of allreduces of changing sizes (so
// one-shot and two-shot alternate, and grids differ) without waiting, sleeping a random time
// between some, some on a second stream and some blocking; every result is checked at the end
// against the host path.  A rank may be a whole call ahead of a peer: the windows must hold.
void pipeline() {
  cohort_team_t team = gpu_team();
  cudaStream_t streams[2];
  CUDA_OK(cudaStreamCreateWithFlags(&streams[0], cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
  const size_t sizes[] = {1, 7, 65537, 1 << 20, 3, 16383, 16384, 300000};
  const int calls = opt_int("calls", 48);
  srand(1234 + g_rank);
  struct Call {
    size_t count;
    void *src, *dst;
    std::vector<char> want;
  };
  std::vector<Call> run(calls);
  const cohort_dtype_t t = COHORT_FLOAT32;
  for (int c = 0; c < calls; ++c) {
    Call &call = run[c];
    call.count = sizes[c % (sizeof(sizes) / sizeof(sizes[0]))];
    const size_t bytes = call.count * sizeof(float);
    std::vector<char> in(bytes);
    for (size_t i = 0; i < call.count; ++i)
      store(t, in.data(), i, input(t, COHORT_SUM, g_rank + c, i));
    call.want.resize(bytes);
    CHECK_STATUS(cohort_allreduce(team, in.data(), call.want.data(), call.count, t, COHORT_SUM),
                 COHORT_SUCCESS);
    CUDA_OK(cudaMalloc(&call.src, bytes));
    CUDA_OK(cudaMalloc(&call.dst, bytes));
    CUDA_OK(cudaMemcpy(call.src, in.data(), bytes, cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD);
  for (int c = 0; c < calls; ++c) {
    Call &call = run[c];
    if (rand() % 4 == 0) usleep(rand() % 2000);
    cohort_status_t s;
    if (c % 7 == 6) {
      s = cohort_allreduce(team, call.src, call.dst, call.count, t, COHORT_SUM);
    } else {
      s = cohort_allreduce_stream(team, call.src, call.dst, call.count, t, COHORT_SUM,
                                  streams[(c / 3) % 2]);
    }
    CHECK(s == COHORT_SUCCESS, "call %d: %s", c, cohort_last_error());
  }
  CUDA_OK(cudaDeviceSynchronize());
  for (int c = 0; c < calls; ++c) {
    std::vector<char> got(run[c].want.size());
    CUDA_OK(cudaMemcpy(got.data(), run[c].dst, got.size(), cudaMemcpyDeviceToHost));
    char what[64];
    snprintf(what, sizeof(what), "call %d (count %zu)", c, run[c].count);
    compare(what, t, got, run[c].want, run[c].count);
    cudaFree(run[c].src);
    cudaFree(run[c].dst);
  }
  if (g_rank == 0) printf("pipeline: %d calls in flight on two streams and blocking\n", calls);
  cudaStreamDestroy(streams[0]);
  cudaStreamDestroy(streams[1]);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// Wrong kinds and collectives the GPU lacks are named errors, and nothing is left running.
void refusals() {
  cohort_team_t team = gpu_team();
  std::vector<float> host(64, 1.0f);
  float *device = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&device), 64 * sizeof(float)));
  cohort_status_t s =
      cohort_allreduce_stream(team, host.data(), host.data(), 64, COHORT_FLOAT32, COHORT_SUM, 0);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "host memory"),
        "host buffers on a stream: %s: %s", cohort_status_string(s), cohort_last_error());
  s = cohort_allreduce(team, host.data(), device, 64, COHORT_FLOAT32, COHORT_SUM);
  CHECK(s == COHORT_ERR_NOT_SUPPORTED && contains(cohort_last_error(), "recvbuf"),
        "mixed kinds: %s: %s", cohort_status_string(s), cohort_last_error());
  // On a stream every buffer must be device memory: a mix, or pinned host memory, is a wrong
  // argument (cohort.h), named.
  s = cohort_allreduce_stream(team, host.data(), device, 64, COHORT_FLOAT32, COHORT_SUM, 0);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "sendbuf is host memory"),
        "host sendbuf, device recvbuf on a stream: %s: %s", cohort_status_string(s),
        cohort_last_error());
  s = cohort_allgather_stream(team, device, host.data(), 1, COHORT_FLOAT32, 0);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "recvbuf is host memory"),
        "device sendbuf, host recvbuf on a stream: %s: %s", cohort_status_string(s),
        cohort_last_error());
  float *pinned = nullptr;
  CUDA_OK(cudaMallocHost(reinterpret_cast<void **>(&pinned), 64 * sizeof(float)));
  s = cohort_allreduce_stream(team, pinned, pinned, 64, COHORT_FLOAT32, COHORT_SUM, 0);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "cuda-host memory"),
        "pinned buffers on a stream: %s: %s", cohort_status_string(s), cohort_last_error());
  cudaFreeHost(pinned);
  cohort_request_t request = nullptr;
  s = cohort_broadcast_post(team, device, device, 64, COHORT_FLOAT32, 0, &request);
  CHECK(s == COHORT_ERR_NOT_SUPPORTED && contains(cohort_last_error(), "broadcast_stream"),
        "a posted broadcast on the GPU: %s: %s", cohort_status_string(s), cohort_last_error());
  // The team still works.
  CHECK_STATUS(cohort_allreduce(team, device, device, 64, COHORT_FLOAT32, COHORT_SUM),
               COHORT_SUCCESS);
  cudaFree(device);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// A host whose GPUs cannot reach each other (run with COHORT_INJECT_NO_P2P=R): the team is
// created, its GPU collectives run through host memory (right results, eager and on a
// stream), registration is refused on every rank naming rank R's GPU, and host collectives
// work.
void no_p2p() {
  cohort_team_t team = gpu_team();
  constexpr size_t kCount = 5 << 20;  // 20 MB: several pieces of COHORT_STAGED_CHUNK_BYTES
  float *device = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&device), kCount * sizeof(float)));
  const char *injected = getenv("COHORT_INJECT_NO_P2P");
  const std::string who = std::string("rank ") + (injected != nullptr ? injected : "?");
  std::vector<float> host(kCount, static_cast<float>(g_rank + 1));
  const float want = static_cast<float>(g_size * (g_size + 1) / 2);
  CUDA_OK(cudaMemcpy(device, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_STATUS(
      cohort_allreduce_stream(team, device, device, kCount, COHORT_FLOAT32, COHORT_SUM, nullptr),
      COHORT_SUCCESS);
  CHECK_STATUS(cohort_allreduce(team, device, device, kCount, COHORT_FLOAT32, COHORT_SUM),
               COHORT_SUCCESS);
  CUDA_OK(cudaMemcpy(host.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost));
  const float twice = want * static_cast<float>(g_size);  // the second sums the first's sums
  CHECK(host[0] == twice && host[kCount - 1] == twice,
        "GPU allreduces without peer access: %g and %g, want %g", host[0], host[kCount - 1], twice);
  cohort_mem_reg_t reg = nullptr;
  cohort_status_t s = cohort_mem_register(team, device, 64 * sizeof(float), &reg);
  CHECK(s == COHORT_ERR_NOT_SUPPORTED && contains(cohort_last_error(), "by peer access") &&
            contains(cohort_last_error(), who),
        "registration without peer access: %s: %s", cohort_status_string(s), cohort_last_error());
  std::fill(host.begin(), host.end(), static_cast<float>(g_rank + 1));
  CHECK_STATUS(cohort_allreduce(team, host.data(), host.data(), 64, COHORT_FLOAT32, COHORT_SUM),
               COHORT_SUCCESS);
  CHECK(host[0] == want && host[63] == want, "host allreduce: %g, want %g", host[0], want);
  cudaFree(device);
  if (g_rank == 0)
    printf(
        "no-p2p: GPU collectives through host memory right, registration refused naming %s, "
        "host ones right\n",
        who.c_str());
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// cohort_mem_register's refusals are named on every rank, and leave the team usable: the
// last rank's host buffer (every rank names that rank), a buffer past its allocation's end, a
// registration deregistered twice or through another team; then a registered allreduce of
// 4 MB (zero-copy) in place, against the host path.
void registration() {
  cohort_team_t team = gpu_team();
  const int odd = g_size - 1;
  const size_t count = size_t{1} << 20, bytes = count * sizeof(float);
  std::vector<float> host(count, 1.0f);
  void *device = nullptr;
  CUDA_OK(cudaMalloc(&device, bytes));
  cohort_mem_reg_t reg = nullptr;
  void *buffer = g_rank == odd ? static_cast<void *>(host.data()) : device;
  cohort_status_t s = cohort_mem_register(team, buffer, bytes, &reg);
  const std::string who = "rank " + std::to_string(odd);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), who) &&
            contains(cohort_last_error(), "not CUDA device memory"),
        "a host buffer on %s: %s: %s", who.c_str(), cohort_status_string(s), cohort_last_error());
  s = cohort_mem_register(team, device, bytes + 4096, &reg);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "past the end"),
        "past the allocation: %s: %s", cohort_status_string(s), cohort_last_error());
  CHECK_STATUS(cohort_mem_register(team, device, bytes, &reg), COHORT_SUCCESS);
  cohort_team_t other = gpu_team();
  s = cohort_mem_deregister(other, reg);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "another team"),
        "deregistered through another team: %s: %s", cohort_status_string(s), cohort_last_error());
  CHECK_STATUS(cohort_team_destroy(other), COHORT_SUCCESS);
  std::vector<float> in(count), want(count), got(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((g_rank + 1) * (i % 97));
  CHECK_STATUS(cohort_allreduce(team, in.data(), want.data(), count, COHORT_FLOAT32, COHORT_SUM),
               COHORT_SUCCESS);
  CUDA_OK(cudaMemcpy(device, in.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_STATUS(cohort_allreduce(team, device, device, count, COHORT_FLOAT32, COHORT_SUM),
               COHORT_SUCCESS);
  CUDA_OK(cudaMemcpy(got.data(), device, bytes, cudaMemcpyDeviceToHost));
  CHECK(got == want, "registered allreduce in place: results differ from the host path");
  CHECK_STATUS(cohort_mem_deregister(team, reg), COHORT_SUCCESS);
  s = cohort_mem_deregister(team, reg);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "not a live registration"),
        "deregistered twice: %s: %s", cohort_status_string(s), cohort_last_error());
  cudaFree(device);
  if (g_rank == 0) printf("registration: refusals named, registered allreduce right\n");
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// Rank --rank never makes the call: it aborts the team instead (abort) or just waits
// (missing, with COHORT_COLL_TIMEOUT set short).  Every other rank's call ends, naming it.
void stop_scenario(bool abort) {
  const int missing = opt_int("rank", g_size - 1);
  cohort_team_t team = gpu_team();
  const size_t count = size_t{1} << 20;
  float *device = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&device), count * sizeof(float)));
  CUDA_OK(cudaMemset(device, 0, count * sizeof(float)));
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = now_s();
  if (g_rank == missing) {
    if (abort) {
      usleep(500000);
      CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);
    }
  } else {
    cohort_status_t s = cohort_allreduce(team, device, device, count, COHORT_FLOAT32, COHORT_SUM);
    const double took = now_s() - start;
    const cohort_status_t want = abort ? COHORT_ERR_ABORTED : COHORT_ERR_TIMEOUT;
    const std::string who = "rank " + std::to_string(missing);
    CHECK(s == want && contains(cohort_last_error(), who), "got %s: %s (want %s naming %s)",
          cohort_status_string(s), cohort_last_error(), cohort_status_string(want), who.c_str());
    const double limit = opt_double("limit", abort ? 3.0 : 10.0);
    CHECK(took < limit, "the call ended after %.2f s (limit %.1f s)", took, limit);
    printf("rank %d: %s after %.2f s: %s\n", g_rank, cohort_status_string(s), took,
           cohort_last_error());
    // The team runs no more collectives, and says why (an abort again; after a failure, that
    // the team is unusable, with the failure).
    s = cohort_allreduce(team, device, device, count, COHORT_FLOAT32, COHORT_SUM);
    const cohort_status_t next = abort ? COHORT_ERR_ABORTED : COHORT_ERR_INVALID_USAGE;
    CHECK(s == next && contains(cohort_last_error(), who), "the next call: %s: %s",
          cohort_status_string(s), cohort_last_error());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  cudaFree(device);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

std::string skip_reason(const std::string &) {
  int gpus = 0;
  cudaError_t err = cudaGetDeviceCount(&gpus);
  if (err != cudaSuccess) return std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
  if (gpus == 0) return "no CUDA device (0 devices)";
  return "";
}

}  // namespace

int main(int argc, char **argv) {
  return run_main(argc, argv,
                  {{"allreduce", allreduce_matrix},
                   {"collectives", collective_matrix},
                   {"mixed", mixed_calls},
                   {"pipeline", pipeline},
                   {"refusals", refusals},
                   {"registration", registration},
                   {"no-p2p", no_p2p},
                   {"abort", [] { stop_scenario(true); }},
                   {"missing", [] { stop_scenario(false); }}},
                  skip_reason);
}
