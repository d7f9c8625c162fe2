// Failures reach every rank at once.  usage: mpirun -np N failure_test SCENARIO [options]
//   abort-ready   one rank aborts a ready team while the others are inside a collective
//   abort-create  one rank aborts its creation after some polls while the others create
//   ucx-fail      a UCX endpoint fails in a collective between (fake) hosts
//   overflow      counts whose byte size wraps size_t or fits no address space
// With --memory device (abort-ready's allreduce, barrier and p2p, ucx-fail), the collectives
// and send/recv groups take device memory of the CUDA driver (the tests' fake one without a
// GPU), blocking or with --stream 1 on a stream (waited for after each call): between fake
// hosts they run through host memory, and must fail as promptly, naming the same rank.
// Times are compared across ranks on CLOCK_MONOTONIC: the ranks share one host.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cuda_driver_test.h"
#include "test_support.h"

using namespace mpi_test;

namespace {

// Within this many seconds of the event every other rank must have its named error.
constexpr double kPromptSeconds = 2.0;

// The latest of every rank's `t`; ranks that pass a negative time do not count.
double latest(double t) {
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

// Every rank's `ended_at` (negative: it had none) came within 2 s of the abort (`aborted_at`
// on the aborting rank); then the aborted team goes and a new one works.
void after_abort(const char *ended, double aborted_at, double ended_at, cohort_team_t team,
                 const cohort_team_config_t &cfg) {
  const double abort_time = latest(aborted_at), last = latest(ended_at);
  CHECK(last - abort_time < kPromptSeconds, "the last rank %s %.3f s after the abort", ended,
        last - abort_time);
  if (g_rank == 0) printf("last rank %s %.3f s after the abort\n", ended, last - abort_time);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  MPI_Barrier(MPI_COMM_WORLD);
  cohort::Team again(MPI_COMM_WORLD, &cfg);
  CHECK(again.size() == g_size, "team after the abort: size %d", again.size());
}

// A fake host per block of --per-node ranks (0: one host), so that UCX carries the bytes.
std::string fake_host() {
  const int per_node = opt_int("per-node", 0);
  return "failure-node-" + std::to_string(per_node > 0 ? g_rank / per_node : 0);
}

// Device memory for --memory device: a copy of the host buffers' sizes, and a stream with
// --stream 1.  Exits 77 (a skip) on every rank where some rank has no CUDA driver.
struct DeviceSide {
  CudaDriver driver;
  void *stream = nullptr;
  bool on = false;
  std::vector<void *> buffers;

  DeviceSide() {
    on = opt_str("memory", "host") == std::string("device");
    if (!on) return;
    int ok = driver.start() ? 1 : 0, everywhere = 0;
    if (ok && opt_int("stream", 0) != 0) ok = (stream = driver.new_stream()) != nullptr;
    MPI_Allreduce(&ok, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {
      if (g_rank == 0) printf("SKIP: no CUDA device (or driver) on some rank\n");
      MPI_Finalize();
      exit(77);
    }
  }
  ~DeviceSide() {
    for (void *b : buffers) cohort_device_free(b);
  }
  // Device memory holding `bytes` of `host`, or `host` itself without --memory device.
  void *place(void *host, size_t bytes) {
    if (!on) return host;
    void *device = nullptr;
    CHECK_STATUS(cohort_device_alloc(bytes, &device), COHORT_SUCCESS);
    CHECK_STATUS(cohort_memcpy(device, host, bytes), COHORT_SUCCESS);
    buffers.push_back(device);
    return device;
  }
  // The collective's status, waited for on the stream when it was enqueued there.
  cohort_status_t ended(cohort_status_t s) {
    if (s == COHORT_SUCCESS && stream != nullptr && driver.stream_sync(stream) != 0) {
      return COHORT_ERR_CUDA;
    }
    return s;
  }
};

// One call of `op` ("allreduce", "barrier" or "p2p": a ring shift through a group); `buffer`
// holds data's elements (on the device with --memory device).
cohort_status_t run_op(cohort_team_t team, const std::string &op, std::vector<float> *data,
                       void *buffer = nullptr, DeviceSide *device = nullptr) {
  if (buffer == nullptr) buffer = data->data();
  void *stream = device != nullptr ? device->stream : nullptr;
  if (op == "barrier") {
    return stream ? device->ended(cohort_barrier_stream(team, stream)) : cohort_barrier(team);
  }
  if (op == "allreduce") {
    if (stream != nullptr) {
      return device->ended(cohort_allreduce_stream(team, buffer, buffer, data->size(),
                                                   COHORT_FLOAT32, COHORT_SUM, stream));
    }
    return cohort_allreduce(team, buffer, buffer, data->size(), COHORT_FLOAT32, COHORT_SUM);
  }
  const int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  if (device != nullptr && device->on) {  // the buffer's first half shifted into its second
    const size_t half = data->size() / 2;
    float *first = static_cast<float *>(buffer), *second = first + half;
    cohort_group_start();
    if (stream != nullptr) {
      cohort_send_stream(team, first, half, COHORT_FLOAT32, next, stream);
      cohort_recv_stream(team, second, half, COHORT_FLOAT32, prev, stream);
    } else {
      cohort_send(team, first, half, COHORT_FLOAT32, next);
      cohort_recv(team, second, half, COHORT_FLOAT32, prev);
    }
    return device->ended(cohort_group_end());
  }
  std::vector<float> in(data->size());
  cohort_group_start();
  cohort_send(team, data->data(), data->size(), COHORT_FLOAT32, next);
  cohort_recv(team, in.data(), in.size(), COHORT_FLOAT32, prev);
  return cohort_group_end();
}

// Every rank but the aborting one calls the collective in a loop until it fails; the
// aborting rank never enters it (or, with --thread 1, loops too while a second thread aborts
// 0.5 s in).  Every rank's call must end with COHORT_ERR_ABORTED within 2 s of the abort, the
// others' naming the aborting rank, and so must their next call.
void scenario_abort_ready() {
  const std::string op = opt_str("op", "allreduce");
  const int aborter = opt_int("rank", g_size - 1);
  const bool from_thread = opt_int("thread", 0) != 0;
  const std::string host = fake_host();
  ScopedEnv host_env("COHORT_HOST_ID", host.c_str());
  cohort_team_config_t cfg = config_with_timeout(30);
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  if (team == nullptr) return;
  std::vector<float> data(1 << 16, 1.0f);
  DeviceSide device;
  void *buffer = device.place(data.data(), data.size() * sizeof(float));
  auto call = [&] { return run_op(team, op, &data, buffer, &device); };
  MPI_Barrier(MPI_COMM_WORLD);
  double aborted_at = -1, returned_at = -1;
  if (g_rank == aborter && !from_thread) {
    usleep(500000);  // the others are inside the collective by now
    aborted_at = now_s();
    CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);
    CHECK_STATUS(call(), COHORT_ERR_ABORTED);  // a later call
  } else {
    std::thread aborting;
    if (g_rank == aborter) {
      aborting = std::thread([&] {
        usleep(500000);
        aborted_at = now_s();
        cohort_team_abort(team);
      });
    }
    cohort_status_t s = COHORT_SUCCESS;
    for (const double until = now_s() + 30; s == COHORT_SUCCESS && now_s() < until;) {
      s = call();
    }
    returned_at = now_s();
    std::string msg = cohort_last_error();
    if (aborting.joinable()) aborting.join();
    CHECK(s == COHORT_ERR_ABORTED, "%s returned %s: %s", op.c_str(), cohort_status_string(s),
          msg.c_str());
    if (g_rank != aborter) {
      CHECK(contains(msg, "rank " + std::to_string(aborter) + " (") && contains(msg, "aborted"),
            "the message does not name rank %d aborting: %s", aborter, msg.c_str());
      CHECK_STATUS(call(), COHORT_ERR_ABORTED);  // the next call, at once
      CHECK(contains(cohort_last_error(), "rank " + std::to_string(aborter)), "next call: %s",
            cohort_last_error());
    }
    if (g_rank == (aborter == 0 ? 1 : 0)) printf("%s: %s\n", op.c_str(), msg.c_str());
  }
  after_abort("returned", aborted_at, returned_at, team, cfg);
}

// One rank polls its posted creation --polls times, then aborts; the others poll theirs to
// the end: they fail with COHORT_ERR_ABORTED naming it within 2 s, and a new team works.
void scenario_abort_create() {
  const int aborter = opt_int("rank", 1), polls = opt_int("polls", 1);
  cohort_team_config_t cfg = config_with_timeout(30);
  cohort_team_t team = nullptr;
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  double aborted_at = -1, failed_at = -1;
  if (g_rank == aborter) {
    for (int k = 0; k < polls; ++k) {
      cohort_status_t s = cohort_team_create_test(team);
      CHECK(s == COHORT_IN_PROGRESS, "poll %d: %s", k + 1, cohort_status_string(s));
      usleep(2000);
    }
    aborted_at = now_s();
    CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);
  } else {
    cohort_status_t s;
    while ((s = cohort_team_create_test(team)) == COHORT_IN_PROGRESS) usleep(100);
    failed_at = now_s();
    std::string msg = cohort_last_error();
    CHECK(s == COHORT_ERR_ABORTED, "creation ended with %s: %s", cohort_status_string(s),
          msg.c_str());
    CHECK(contains(msg, "rank " + std::to_string(aborter)) && contains(msg, "aborted"),
          "the message does not name rank %d aborting: %s", aborter, msg.c_str());
    if (g_rank == (aborter == 0 ? 1 : 0)) printf("after %d polls: %s\n", polls, msg.c_str());
  }
  after_abort("failed", aborted_at, failed_at, team, cfg);
}

// COHORT_INJECT_UCX_FAILURE=R:P:M (set by the launcher) breaks rank R's endpoint to rank P
// inside the alltoalls below (every pair talks): rank R fails naming P and UCX's reason, every
// other rank fails naming R, each within 2 s of R's failure (COHORT_COLL_TIMEOUT is 60 s: no
// timeout helps).
void scenario_ucx_fail() {
  const std::string host = fake_host();
  ScopedEnv host_env("COHORT_HOST_ID", host.c_str());
  ScopedEnv timeout_env("COHORT_COLL_TIMEOUT", "60");
  int injector = -1, peer = -1;
  sscanf(getenv("COHORT_INJECT_UCX_FAILURE") ? getenv("COHORT_INJECT_UCX_FAILURE") : "", "%d:%d",
         &injector, &peer);
  CHECK(injector >= 0 && peer >= 0, "COHORT_INJECT_UCX_FAILURE is not set");
  cohort::Team team(MPI_COMM_WORLD);
  CHECK(team.node_count() > 1, "the team must span (fake) hosts: %d", team.node_count());
  std::vector<float> in(g_size * 4096, 1.0f), out(in.size());
  DeviceSide device;
  void *src = device.place(in.data(), in.size() * sizeof(float));
  void *dst = device.place(out.data(), out.size() * sizeof(float));
  cohort_status_t s = COHORT_SUCCESS;
  double failed_at = -1;
  for (int call = 0; call < 50 && s == COHORT_SUCCESS; ++call) {
    s = device.stream != nullptr ? device.ended(cohort_alltoall_stream(
                                       team.get(), src, dst, 4096, COHORT_FLOAT32, device.stream))
                                 : cohort_alltoall(team.get(), src, dst, 4096, COHORT_FLOAT32);
    failed_at = now_s();
  }
  std::string msg = cohort_last_error();
  CHECK(s == COHORT_ERR_SYSTEM, "alltoall ended with %s: %s", cohort_status_string(s), msg.c_str());
  const std::string named_peer = "UCX connection to rank " + std::to_string(peer);
  CHECK(contains(msg, named_peer) && contains(msg, "reset"), "no '%s ... reset' in: %s",
        named_peer.c_str(), msg.c_str());
  if (g_rank != injector) {
    CHECK(contains(msg, "rank " + std::to_string(injector) + " ("), "does not name rank %d: %s",
          injector, msg.c_str());
  }
  const double injector_failed = latest(g_rank == injector ? failed_at : -1);
  const double last_failure = latest(failed_at);
  CHECK(last_failure - injector_failed < kPromptSeconds,
        "the last rank failed %.3f s after rank %d", last_failure - injector_failed, injector);
  if (g_rank == (injector == 0 ? 1 : 0)) {
    printf("last rank failed %.3f s after the failing rank: %s\n", last_failure - injector_failed,
           msg.c_str());
  }
}

// Guard bytes around every buffer; the test checks they, and the buffers, stay as they were.
struct Guarded {
  explicit Guarded(size_t bytes) : memory(bytes + 2 * kGuard, 0x5a) {}
  void *data() { return memory.data() + kGuard; }
  bool untouched() const {
    for (uint8_t b : memory) {
      if (b != 0x5a) return false;
    }
    return true;
  }
  static constexpr size_t kGuard = 64;
  std::vector<uint8_t> memory;
};

// Every collective (blocking and posted) and send/recv with counts whose size wraps size_t
// (SIZE_MAX, SIZE_MAX / 2 + 1 for 2+ byte types, SIZE_MAX / size + 1 for the blocked ones) or
// exceeds any address space: COHORT_ERR_INVALID_ARG naming `count`, nothing written, nothing
// sent (a correct collective right after still works).
void scenario_overflow() {
  cohort::Team team(MPI_COMM_WORLD);
  cohort_team_t t = team.get();
  const size_t counts[] = {SIZE_MAX, SIZE_MAX / 2 + 1, SIZE_MAX / g_size + 1};
  const cohort_dtype_t dtypes[] = {COHORT_INT8, COHORT_FLOAT16, COHORT_FLOAT64};
  Guarded src(256), dst(256);
  int refused = 0;
  auto expect_refused = [&](cohort_status_t s, const char *what, size_t count, cohort_dtype_t d) {
    ++refused;
    CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "count="),
          "%s count %zu dtype %d: %s %s", what, count, d, cohort_status_string(s),
          cohort_last_error());
  };
  for (size_t count : counts) {
    for (cohort_dtype_t d : dtypes) {
      void *in = src.data(), *out = dst.data();
      cohort_request_t r = nullptr;
      expect_refused(cohort_allreduce(t, in, out, count, d, COHORT_SUM), "allreduce", count, d);
      expect_refused(cohort_reduce(t, in, out, count, d, COHORT_SUM, 0), "reduce", count, d);
      expect_refused(cohort_broadcast(t, in, out, count, d, 0), "broadcast", count, d);
      expect_refused(cohort_allgather(t, in, out, count, d), "allgather", count, d);
      expect_refused(cohort_reduce_scatter(t, in, out, count, d, COHORT_SUM), "reduce_scatter",
                     count, d);
      expect_refused(cohort_alltoall(t, in, out, count, d), "alltoall", count, d);
      expect_refused(cohort_allreduce_post(t, in, out, count, d, COHORT_SUM, &r), "posted", count,
                     d);
      expect_refused(cohort_allgather_post(t, in, out, count, d, &r), "posted allgather", count, d);
      CHECK(r == nullptr, "a refused post wrote its request");
      expect_refused(cohort_send(t, in, count, d, (g_rank + 1) % g_size), "send", count, d);
      expect_refused(cohort_recv(t, out, count, d, (g_rank + 1) % g_size), "recv", count, d);
      cohort_group_start();
      cohort_send(t, in, 16, COHORT_INT8, (g_rank + 1) % g_size);
      expect_refused(cohort_recv(t, out, count, d, (g_rank + g_size - 1) % g_size), "group recv",
                     count, d);
      expect_refused(cohort_group_end(), "group end", count, d);
    }
  }
  CHECK(src.untouched() && dst.untouched(), "a refused call wrote to a buffer or its guards");
  if (g_rank == 0) printf("%d calls refused, nothing written\n", refused);
  int64_t value = g_rank + 1;
  CHECK_STATUS(cohort_allreduce(t, &value, &value, 1, COHORT_INT64, COHORT_SUM), COHORT_SUCCESS);
  CHECK(value == static_cast<int64_t>(g_size) * (g_size + 1) / 2, "allreduce after: %lld",
        static_cast<long long>(value));
}

}  // namespace

int main(int argc, char **argv) {
  const Scenarios scenarios = {
      {"abort-ready", scenario_abort_ready},
      {"abort-create", scenario_abort_create},
      {"ucx-fail", scenario_ucx_fail},
      {"overflow", scenario_overflow},
  };
  return run_main(argc, argv, scenarios);
}
