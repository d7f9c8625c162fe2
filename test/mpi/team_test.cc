// Multi-rank team tests.  usage: mpirun -np N team_test SCENARIO [options]
// Every rank checks what it sees; the job exits 0 only if every check on every rank held,
// 77 if the scenario cannot run on this machine (e.g. needs a GPU).
#include <dirent.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cohort_mpi.h"
#include "cohort.hpp"
#include "test_support.h"
#include "test_values.h"

#if COHORT_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace mpi_test;

int count_open_fds() {
  int n = 0;
  DIR *dir = opendir("/proc/self/fd");
  while (dir != nullptr && readdir(dir) != nullptr) ++n;
  if (dir != nullptr) closedir(dir);
  return n;
}

long rss_kib() {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f != nullptr && fgets(line, sizeof(line), f) != nullptr) {
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  if (f != nullptr) fclose(f);
  return kib;
}

// ----------------------------------------------------------------- scenarios

void check_report(const cohort_init_report_t &report, int team_size) {
  const char *names[] = {"check-in", "peer-info", "local-ranks", "topology",
                         "graphs",   "align",     "connect",     "device-setup"};
  const int expected = static_cast<int>(sizeof(names) / sizeof(names[0]));
  CHECK(report.num_phases == expected, "num_phases %d", report.num_phases);
  for (int p = 0; p < report.num_phases && p < expected; ++p) {
    const cohort_phase_stats_t &s = report.phases[p];
    CHECK(strcmp(s.name, names[p]) == 0, "phase %d named %s", p, s.name);
    CHECK(0 <= s.min_ns && s.min_ns <= s.median_ns && s.median_ns <= s.max_ns,
          "phase %s: min %lld median %lld max %lld", s.name, (long long)s.min_ns,
          (long long)s.median_ns, (long long)s.max_ns);
    CHECK(s.slowest_rank >= 0 && s.slowest_rank < team_size, "slowest rank %d", s.slowest_rank);
    CHECK(report.total.max_ns >= s.max_ns, "total max %lld < phase max %lld",
          (long long)report.total.max_ns, (long long)s.max_ns);
  }
  CHECK(report.phases[0].min_ns > 0, "check-in took no time");
}

std::string report_text(const cohort_init_report_t &r) {
  std::string out;
  for (int p = 0; p < r.num_phases; ++p) {
    out += std::to_string(r.phases[p].min_ns) + "/" + std::to_string(r.phases[p].median_ns) + "/" +
           std::to_string(r.phases[p].max_ns) + "/" + std::to_string(r.phases[p].slowest_rank) +
           ";";
  }
  return out;
}

void scenario_create() {
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, nullptr, &team), COHORT_SUCCESS);
  if (team == nullptr) return;
  int size = -1, rank = -1, nodes = -1, node = -1, local_rank = -1, local_size = -1, dev = -9;
  uint64_t host = 0;
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_rank(team, &rank), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_node_count(team, &nodes), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_node_index(team, &node), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_local_rank(team, &local_rank), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_local_size(team, &local_size), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_cuda_device(team, &dev), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_host_id(team, &host), COHORT_SUCCESS);
  CHECK(size == g_size && rank == g_rank, "size %d rank %d", size, rank);
  CHECK(nodes == 1 && node == 0, "nodes %d node %d on one host", nodes, node);
  CHECK(local_rank == g_rank && local_size == g_size, "local %d/%d", local_rank, local_size);
  CHECK(same_everywhere(std::to_string(host)), "host ids differ on one host");
  std::vector<int> pids(g_size);
  int pid = getpid();
  MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < g_size; ++r) {
    cohort_peer_info_t info;
    CHECK_STATUS(cohort_team_peer_info(team, r, &info), COHORT_SUCCESS);
    CHECK(info.rank == r && info.pid == pids[r], "peer %d: rank %d pid %d, expected pid %d", r,
          info.rank, info.pid, pids[r]);
    CHECK(info.host_id == host && info.local_rank == r, "peer %d host/local rank", r);
  }
  cohort_init_report_t report;
  CHECK_STATUS(cohort_team_init_report(team, &report), COHORT_SUCCESS);
  check_report(report, g_size);
  CHECK(same_everywhere(report_text(report)), "init report differs between ranks");
  char text[4096];
  CHECK_STATUS(cohort_team_init_report_format(team, text, sizeof(text)), COHORT_SUCCESS);
  CHECK(contains(text, "peer-info") && contains(text, "total"), "report text: %s", text);
  cohort_status_t async = COHORT_ERR_INTERNAL;
  CHECK_STATUS(cohort_team_get_async_error(team, &async), COHORT_SUCCESS);
  CHECK(async == COHORT_SUCCESS, "async error %s", cohort_status_string(async));

  // A second team on the same communicator, alive at the same time, through the C++ layer.
  cohort::Team second(MPI_COMM_WORLD);
  CHECK(second.size() == g_size && second.rank() == g_rank, "second team size/rank");
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

void scenario_split() {
  cohort::Team parent(MPI_COMM_WORLD);
  // Two colors (by parity), keys reversing the parent order.
  int color = g_rank % 2, key = g_size - g_rank;
  cohort::Team child = parent.split(color, key);
  std::vector<int> expected;
  for (int r = g_size - 1; r >= 0; --r) {
    if (r % 2 == color) expected.push_back(r);
  }
  int expected_rank =
      static_cast<int>(std::find(expected.begin(), expected.end(), g_rank) - expected.begin());
  CHECK(child.size() == static_cast<int>(expected.size()), "child size %d expected %zu",
        child.size(), expected.size());
  CHECK(child.rank() == expected_rank, "child rank %d expected %d", child.rank(), expected_rank);
  std::vector<int> pids(g_size);
  int pid = getpid();
  MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int c = 0; c < child.size(); ++c) {
    CHECK(child.peer(c).pid == pids[expected[c]], "child rank %d is not parent rank %d", c,
          expected[c]);
  }
  check_report(child.init_report(), child.size());

  // Equal keys keep parent order; rank 0 (and the last rank) take no part in a child.
  bool out = g_rank == 0 || (g_size > 2 && g_rank == g_size - 1);
  cohort::Team tied = parent.split(out ? COHORT_SPLIT_NOCOLOR : 7, 0);
  CHECK(static_cast<bool>(tied) == !out, "NOCOLOR rank got a team, or a colored one none");
  if (tied) {
    int members = g_size - 1 - (g_size > 2 ? 1 : 0);
    CHECK(tied.size() == members && tied.rank() == g_rank - 1, "tied child %d/%d", tied.rank(),
          tied.size());
    // Nested: split the child again into halves, keys descending by child rank.
    int half = tied.rank() < (tied.size() + 1) / 2 ? 0 : 1;
    cohort::Team nested = tied.split(half, -tied.rank());
    std::vector<int> in_half;
    for (int c = tied.size() - 1; c >= 0; --c) {
      if ((c < (tied.size() + 1) / 2 ? 0 : 1) == half) in_half.push_back(c);
    }
    int want =
        static_cast<int>(std::find(in_half.begin(), in_half.end(), tied.rank()) - in_half.begin());
    CHECK(nested.size() == static_cast<int>(in_half.size()) && nested.rank() == want,
          "nested %d/%d expected %d/%zu", nested.rank(), nested.size(), want, in_half.size());
    CHECK(nested.peer(nested.rank()).pid == pid, "nested peer info of self");
  }
  // A bad color on one rank fails the split on every rank, naming it.
  int bad = g_size > 1 ? 1 : 0;
  cohort_team_t none = nullptr;
  cohort_status_t s = cohort_team_split(parent.get(), g_rank == bad ? -5 : 0, 0, nullptr, &none);
  CHECK(s == COHORT_ERR_INVALID_ARG, "bad color split: %s", cohort_status_string(s));
  std::string msg = cohort_last_error();
  CHECK(contains(msg, "rank " + std::to_string(bad)) && contains(msg, "color=-5"),
        "bad color message: %s", msg.c_str());
  CHECK(none == nullptr, "failed split wrote the output");
}

void scenario_nonblocking() {
  cohort_team_config_t cfg = config_with_timeout(30);
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  if (team == nullptr) return;
  int size = -1;
  cohort_status_t first = cohort_team_create_test(team);
  if (first == COHORT_IN_PROGRESS) {
    CHECK_STATUS(cohort_team_size(team, &size), COHORT_ERR_INVALID_USAGE);
    cohort_status_t async = COHORT_SUCCESS;
    CHECK_STATUS(cohort_team_get_async_error(team, &async), COHORT_SUCCESS);
    CHECK(async == COHORT_IN_PROGRESS, "async during creation: %s", cohort_status_string(async));
  }
  cohort_status_t s = first;
  int polls = 1;
  while (s == COHORT_IN_PROGRESS) {
    usleep(100);
    s = cohort_team_create_test(team);
    ++polls;
  }
  CHECK(s == COHORT_SUCCESS, "nonblocking create: %s %s", cohort_status_string(s),
        cohort_last_error());
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_SUCCESS);
  CHECK(size == g_size, "size %d", size);
  CHECK_STATUS(cohort_team_create_test(team), COHORT_SUCCESS);  // idempotent once ready
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  if (g_rank == 0) printf("nonblocking create finished after %d polls on rank 0\n", polls);
}

void scenario_abort() {
  // Abort mid-creation on every rank, then create again: nothing stale may get in the way.
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, nullptr, &team), COHORT_SUCCESS);
  cohort_team_create_test(team);
  CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);
  int size = 0;
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_ERR_ABORTED);
  CHECK_STATUS(cohort_team_create_test(team), COHORT_ERR_ABORTED);
  cohort_status_t async = COHORT_SUCCESS;
  CHECK_STATUS(cohort_team_get_async_error(team, &async), COHORT_SUCCESS);
  CHECK(async == COHORT_ERR_ABORTED, "async after abort: %s", cohort_status_string(async));
  CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);  // twice is fine
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "not a live team"), "%s", cohort_last_error());
  MPI_Barrier(MPI_COMM_WORLD);

  // Abort a ready team: queries fail with ABORTED; a new team still works.
  cohort_team_config_t cfg = config_with_timeout(20);
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_rank(team, &size), COHORT_ERR_ABORTED);
  cohort_team_t child = nullptr;
  CHECK_STATUS(cohort_team_split(team, 0, 0, nullptr, &child), COHORT_ERR_ABORTED);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_SUCCESS);
  CHECK(size == g_size, "size after aborts %d", size);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
}

// A blocking create expected to fail: its status, message and duration.
struct FailedCreate {
  cohort_status_t status;
  std::string message;
  double elapsed_s;
};

FailedCreate create_expecting_failure(const cohort_team_config_t &cfg) {
  cohort_team_t team = nullptr;
  double t0 = now_s();
  cohort_status_t s = cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team);
  FailedCreate out{s, cohort_last_error(), now_s() - t0};
  CHECK(s != COHORT_SUCCESS, "create succeeded");
  CHECK(team == nullptr, "failed create wrote the output");
  if (team != nullptr) cohort_team_destroy(team);
  return out;
}

// Ranks in [skip] never call create; the others must fail within timeout + 1 s naming them.
// Two creations posted on one communicator, progressed in different orders on different
// ranks.  Their MPI_Comm_idup calls must still come in posting order everywhere: rank 0
// polls only the second for a while, which must wait for the first (checked in on the other
// ranks, confirmed on rank 0) instead of posting its dup first and pairing with their first.
void scenario_two_posted() {
  cohort_team_config_t cfg = config_with_timeout(20);
  cohort_team_t first = nullptr, second = nullptr;
  CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, &cfg, &first), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, &cfg, &second), COHORT_SUCCESS);
  if (first == nullptr || second == nullptr) return;
  cohort_status_t s1 = COHORT_IN_PROGRESS, s2 = COHORT_IN_PROGRESS;
  if (g_rank != 0) s1 = cohort_team_create_test(first);  // arrive in the first
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    s1 = cohort_team_create_test(first);  // arrive (and confirm) in the first, then leave it
    double until = now_s() + 1.0;
    while (now_s() < until && s2 == COHORT_IN_PROGRESS) {
      s2 = cohort_team_create_test(second);
      usleep(200);
    }
    // (One rank alone finishes the first's check-in and posts its dup within its one poll.)
    CHECK(g_size == 1 || s2 == COHORT_IN_PROGRESS,
          "the second creation went ahead of the first: %s %s", cohort_status_string(s2),
          cohort_last_error());
  }
  while (s1 == COHORT_IN_PROGRESS || s2 == COHORT_IN_PROGRESS) {
    if (s1 == COHORT_IN_PROGRESS) s1 = cohort_team_create_test(first);
    if (s2 == COHORT_IN_PROGRESS) s2 = cohort_team_create_test(second);
    usleep(100);
  }
  CHECK(s1 == COHORT_SUCCESS, "first: %s %s", cohort_status_string(s1), cohort_last_error());
  CHECK(s2 == COHORT_SUCCESS, "second: %s %s", cohort_status_string(s2), cohort_last_error());
  if (s1 == COHORT_SUCCESS && s2 == COHORT_SUCCESS) {
    // Both work, each on its own communicator: interleaved collectives stay apart.
    int64_t a = g_rank, b = 1000 + g_rank;
    CHECK_STATUS(cohort_allreduce(first, &a, &a, 1, COHORT_INT64, COHORT_SUM), COHORT_SUCCESS);
    CHECK_STATUS(cohort_allreduce(second, &b, &b, 1, COHORT_INT64, COHORT_MAX), COHORT_SUCCESS);
    int64_t n = g_size;
    CHECK(a == n * (n - 1) / 2, "first allreduce %lld", static_cast<long long>(a));
    CHECK(b == 1000 + n - 1, "second allreduce %lld", static_cast<long long>(b));
  }
  cohort_team_destroy(first);
  cohort_team_destroy(second);
}

void scenario_missing() {
  int skip = opt_int("skip", 0);
  double timeout = opt_double("timeout", 2.0);
  cohort_team_config_t cfg = config_with_timeout(timeout);
  if (g_rank != skip) {
    auto [s, msg, elapsed] = create_expecting_failure(cfg);
    CHECK(s == COHORT_ERR_TIMEOUT, "status %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(elapsed <= timeout + 1.0, "failed after %.3f s, timeout %.3f s", elapsed, timeout);
    // The rank whose own clock ran out waited the whole timeout; the others hear of it and
    // may stop earlier by the skew of their starts (tens of ms with 8 ranks on 2 cores).
    bool relayed = contains(msg, "gave up");
    double least = relayed ? timeout * 0.5 : timeout * 0.99;
    CHECK(elapsed >= least, "failed after %.3f s, before the timeout (%s)", elapsed,
          relayed ? "relayed" : "own clock");
    CHECK(contains(msg, "rank " + std::to_string(skip)) && contains(msg, "check-in"),
          "message does not name rank %d and the phase: %s", skip, msg.c_str());
    std::string count = "1 of " + std::to_string(g_size) + " ranks";
    CHECK(contains(msg, count), "message does not count the missing: %s", msg.c_str());
    if (g_rank == (skip == 0 ? 1 : 0))
      printf("rank %d saw after %.3f s: %s\n", g_rank, elapsed, msg.c_str());
  }
  // MPI is still usable by everyone, and a team created by all ranks now works.
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
  CHECK(sum == g_size, "allreduce after failure: %d", sum);
  MPI_Comm_free(&dup);
  cohort_team_t team = nullptr;
  cfg.init_timeout = 30;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  if (team != nullptr) CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  // Then a creation that fails alike everywhere (a bad config on one rank), then a good one:
  // left-over messages of the failed attempts must not leak into later ones.
  cohort_team_config_t bad = cfg;
  if (g_rank == g_size - 1) bad.cuda_device = -7;
  team = nullptr;
  cohort_status_t s = cohort_team_create_mpi(MPI_COMM_WORLD, &bad, &team);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "config->cuda_device=-7"),
        "bad config after a timeout: %s %s", cohort_status_string(s), cohort_last_error());
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  if (team != nullptr) CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);  // would hang behind a stranded MPI_Comm_idup
  MPI_Comm_free(&dup);
}

// One rank aborts its creation right after posting it: the others fail at once, naming it,
// and the next creation by everyone works.
void scenario_abort_one() {
  int aborter = opt_int("rank", 1);
  cohort_team_config_t cfg = config_with_timeout(20);
  if (g_rank == aborter) {
    cohort_team_t team = nullptr;
    CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
    CHECK_STATUS(cohort_team_abort(team), COHORT_SUCCESS);
    CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  } else {
    auto [s, msg, elapsed] = create_expecting_failure(cfg);
    CHECK(s == COHORT_ERR_ABORTED, "status %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(elapsed < 5.0, "others failed only after %.2f s", elapsed);
    CHECK(contains(msg, "rank " + std::to_string(aborter)) && contains(msg, "aborted"),
          "message: %s", msg.c_str());
    if (g_rank == (aborter == 0 ? 1 : 0)) printf("rank %d: %s\n", g_rank, msg.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  cohort::Team team(MPI_COMM_WORLD, &cfg);
  CHECK(team.size() == g_size, "team after an abort: size %d", team.size());
}

// Calls after MPI_Finalize: named errors, no MPI call.
void scenario_after_finalize() {
  cohort_team_t ready = nullptr, posted = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, nullptr, &ready), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_create_mpi_post(MPI_COMM_WORLD, nullptr, &posted), COHORT_SUCCESS);
  MPI_Finalize();
  g_finalized = true;
  CHECK_STATUS(cohort_team_create_test(posted), COHORT_ERR_INVALID_USAGE);
  CHECK(contains(cohort_last_error(), "finalised"), "%s", cohort_last_error());
  cohort_team_t child = nullptr;
  CHECK_STATUS(cohort_team_split(ready, 0, 0, nullptr, &child), COHORT_ERR_INVALID_USAGE);
  cohort_team_t late = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, nullptr, &late), COHORT_ERR_INVALID_USAGE);
  int size = 0;
  CHECK_STATUS(cohort_team_size(ready, &size), COHORT_SUCCESS);  // local data stays readable
  CHECK_STATUS(cohort_team_destroy(posted), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_destroy(ready), COHORT_SUCCESS);
}

// One rank never calls split: the others fail within the parent's timeout + 1 s, naming it.
void scenario_split_missing() {
  int skip = opt_int("skip", 0);
  double timeout = opt_double("timeout", 2.0);
  cohort_team_config_t cfg = config_with_timeout(timeout);
  cohort::Team parent(MPI_COMM_WORLD, &cfg);
  if (g_rank != skip) {
    cohort_team_t child = nullptr;
    double t0 = now_s();
    cohort_status_t s = cohort_team_split(parent.get(), 0, g_rank, nullptr, &child);
    double elapsed = now_s() - t0;
    std::string msg = cohort_last_error();
    CHECK(s == COHORT_ERR_TIMEOUT && child == nullptr, "split: %s %s", cohort_status_string(s),
          msg.c_str());
    CHECK(elapsed <= timeout + 1.0, "split failed after %.3f s", elapsed);
    CHECK(contains(msg, "rank " + std::to_string(skip) + " (host ") && contains(msg, "split"),
          "message: %s", msg.c_str());
    if (g_rank == (skip == 0 ? 1 : 0)) printf("rank %d: %s\n", g_rank, msg.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// COHORT_INJECT_FAILURE=PHASE:RANK (set by the launcher): every rank returns the same error.
void scenario_inject() {
  std::string phase = opt_str("phase", "peer-info");
  int bad = opt_int("rank", 0);
  cohort_team_config_t cfg = config_with_timeout(20);
  auto [s, msg, elapsed] = create_expecting_failure(cfg);
  (void)elapsed;
  CHECK(s == COHORT_ERR_SYSTEM, "status %s: %s", cohort_status_string(s), msg.c_str());
  CHECK(contains(msg, "rank " + std::to_string(bad)) && contains(msg, "phase " + phase) &&
            contains(msg, "injected failure"),
        "message: %s", msg.c_str());
  CHECK(same_everywhere(msg + cohort_status_string(s)), "ranks disagree: %s", msg.c_str());
  if (g_rank == 0) printf("every rank: %s: %s\n", cohort_status_string(s), msg.c_str());
}

// COHORT_INJECT_FAILURE=PHASE:RANK:stall: that rank stalls past the timeout in a later phase.
void scenario_stall() {
  std::string phase = opt_str("phase", "peer-info");
  int bad = opt_int("rank", 0);
  double timeout = opt_double("timeout", 1.5);
  cohort_team_config_t cfg = config_with_timeout(timeout);
  auto [s, msg, elapsed] = create_expecting_failure(cfg);
  CHECK(s == COHORT_ERR_TIMEOUT, "status %s: %s", cohort_status_string(s), msg.c_str());
  if (g_rank != bad) {
    CHECK(contains(msg, "phase " + phase) && contains(msg, "rank " + std::to_string(bad)),
          "message: %s", msg.c_str());
    if (phase != "check-in") {  // every rank's host and pid are known after arrival
      CHECK(contains(msg, "host ") && contains(msg, "pid "), "no host/pid: %s", msg.c_str());
    }
    CHECK(elapsed <= timeout + 1.0, "others failed after %.3f s", elapsed);
  } else {
    CHECK(elapsed <= 1.2 * timeout + 0.3 + timeout + 1.0, "stalled rank failed after %.3f s",
          elapsed);
  }
  if (g_rank == (bad == 0 ? 1 : 0)) printf("rank %d: %s\n", g_rank, msg.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

// The plan every rank got: the same hash; per channel, rings that are one cycle through every
// rank with each host's ranks contiguous, and trees with one root whose links agree.
// --per-node K fakes hosts of K ranks; --channels N and --intra TYPE state what to expect (with
// COHORT_TOPO_FILE naming a reference machine).
void check_plan_rings(cohort_team_t team, int channel, const std::vector<int> &host_of) {
  int prev = -1, next = -1;
  CHECK_STATUS(cohort_team_plan_ring(team, channel, &prev, &next), COHORT_SUCCESS);
  std::vector<int> nexts(g_size), prevs(g_size);
  MPI_Allgather(&next, 1, MPI_INT, nexts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Allgather(&prev, 1, MPI_INT, prevs.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int at = 0, crossings = 0;
  for (int step = 0; step < g_size; ++step) {
    int to = nexts[at];
    CHECK(to >= 0 && to < g_size && prevs[to] == at, "channel %d: %d -> %d, prev %d", channel, at,
          to, to >= 0 && to < g_size ? prevs[to] : -1);
    if (to < 0 || to >= g_size) return;
    crossings += host_of[to] != host_of[at];
    at = to;
    if (at == 0 && step + 1 < g_size)
      CHECK(false, "channel %d: ring closes after %d", channel, step + 1);
  }
  CHECK(at == 0, "channel %d: ring does not close", channel);
  int hosts = *std::max_element(host_of.begin(), host_of.end()) + 1;
  CHECK(crossings == (hosts > 1 ? hosts : 0), "channel %d: ring crosses hosts %d times (%d hosts)",
        channel, crossings, hosts);
}

void check_plan_tree(cohort_team_t team, int channel) {
  int link[4] = {-1, -1, -1, -1};
  CHECK_STATUS(cohort_team_plan_tree(team, channel, &link[0], &link[1]), COHORT_SUCCESS);
  std::vector<int> all(4 * g_size);
  MPI_Allgather(link, 4, MPI_INT, all.data(), 4, MPI_INT, MPI_COMM_WORLD);
  int roots = 0;
  for (int r = 0; r < g_size; ++r) {
    int up = all[4 * r];
    for (int k = 1; k < 4; ++k) {
      int child = all[4 * r + k];
      CHECK(child < 0 || (child < g_size && all[4 * child] == r),
            "channel %d: rank %d lists child %d whose parent is %d", channel, r, child,
            child >= 0 && child < g_size ? all[4 * child] : -1);
    }
    int steps = 0;
    for (int at = r; at >= 0 && at < g_size && all[4 * at] >= 0 && steps <= g_size;
         at = all[4 * at]) {
      ++steps;
    }
    CHECK(steps <= g_size, "channel %d: rank %d never reaches the root", channel, r);
    if (up < 0) {
      ++roots;
      continue;
    }
    int listed = 0;
    for (int k = 1; k < 4; ++k) listed += all[4 * up + k] == r;
    CHECK(listed == 1, "channel %d: rank %d's parent %d lists it %d times", channel, r, up, listed);
  }
  CHECK(roots == 1, "channel %d: %d roots", channel, roots);
}

void scenario_plan() {
  int per_node = opt_int("per-node", 0);
  std::string host = "plan-host-" + std::to_string(per_node > 0 ? g_rank / per_node : 0);
  ScopedEnv host_env("COHORT_HOST_ID", per_node > 0 ? host.c_str() : getenv("COHORT_HOST_ID"));
  cohort::Team team(MPI_COMM_WORLD);
  cohort_plan_info_t info;
  CHECK_STATUS(cohort_team_plan_info(team.get(), &info), COHORT_SUCCESS);
  CHECK(same_everywhere(std::to_string(info.hash) + "/" + std::to_string(info.channels)),
        "ranks hold different plans");
  CHECK(info.channels >= 1 && info.channels <= 32, "channels %d", info.channels);
  CHECK(info.nodes == team.node_count(), "plan has %d hosts, team %d", info.nodes,
        team.node_count());
  int want_channels = opt_int("channels", 0);
  if (want_channels > 0) {
    CHECK(info.channels == want_channels, "channels %d expected %d", info.channels, want_channels);
  }
  std::string want_intra = opt_str("intra", "");
  if (!want_intra.empty()) {
    CHECK(want_intra == info.intra_path, "intra path %s expected %s", info.intra_path,
          want_intra.c_str());
  }
  std::vector<int> host_of(g_size);
  for (int r = 0; r < g_size; ++r) host_of[r] = team.peer(r).node_index;
  for (int c = 0; c < info.channels; ++c) {
    check_plan_rings(team.get(), c, host_of);
    check_plan_tree(team.get(), c);
  }
  int prev = 0, next = 0, up = 0, down[3];
  CHECK_STATUS(cohort_team_plan_ring(team.get(), info.channels, &prev, &next),
               COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_plan_tree(team.get(), -1, &up, down), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_plan_info(team.get(), nullptr), COHORT_ERR_INVALID_ARG);
  if (g_rank == 0) {
    printf("plan: %d channels x %.1f GB/s, %s in hosts, %s to NICs, %d hosts, hash %016llx\n",
           info.channels, info.bw_per_channel, info.intra_path, info.net_path, info.nodes,
           (unsigned long long)info.hash);
  }
}

// Rings dumped with COHORT_GRAPH_DUMP_FILE and loaded back with COHORT_GRAPH_FILE give the
// same plan; a file naming a GPU twice fails creation on every rank with its line.
void scenario_plan_graph_file() {
  char dir[] = "/tmp/cohort-graph-XXXXXX";
  if (g_rank == 0 && mkdtemp(dir) == nullptr) CHECK(false, "mkdtemp: %s", strerror(errno));
  MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::string pattern = std::string(dir) + "/graph-%h.xml";
  uint64_t searched = 0, loaded = 0;
  {
    ScopedEnv dump("COHORT_GRAPH_DUMP_FILE", pattern.c_str());
    cohort::Team team(MPI_COMM_WORLD);
    cohort_plan_info_t info;
    CHECK_STATUS(cohort_team_plan_info(team.get(), &info), COHORT_SUCCESS);
    searched = info.hash;
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string file = std::string(dir) + "/graph-" + host + ".xml";
  {
    ScopedEnv load("COHORT_GRAPH_FILE", file.c_str());
    cohort::Team team(MPI_COMM_WORLD);
    cohort_plan_info_t info;
    CHECK_STATUS(cohort_team_plan_info(team.get(), &info), COHORT_SUCCESS);
    loaded = info.hash;
  }
  CHECK(searched == loaded, "plan from the dumped rings differs: %016llx vs %016llx",
        (unsigned long long)searched, (unsigned long long)loaded);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::string cmd = "sed -i '0,/<gpu /{s|\\(<gpu [^>]*>\\)|\\1\\1|}' " + file;
    CHECK(system(cmd.c_str()) == 0, "could not edit %s", file.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  {
    ScopedEnv load("COHORT_GRAPH_FILE", file.c_str());
    auto [s, msg, elapsed] = create_expecting_failure(config_with_timeout(20));
    (void)elapsed;
    CHECK(s == COHORT_ERR_INVALID_ARG && contains(msg, "phase graphs") && contains(msg, " line ") &&
              contains(msg, "twice"),
          "status %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(same_everywhere(msg), "ranks disagree: %s", msg.c_str());
    if (g_rank == 0) printf("edited file: %s\n", msg.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::string cmd = std::string("rm -rf ") + dir;
    CHECK(system(cmd.c_str()) == 0, "could not remove %s", dir);
  }
}

// A rank reporting another plan (COHORT_INJECT_FAILURE=align:R:skew), or a topology file that
// does not load (--bad-file): every rank fails alike, naming the rank or the file's line.
void scenario_plan_fails() {
  cohort_team_config_t cfg = config_with_timeout(20);
  auto [s, msg, elapsed] = create_expecting_failure(cfg);
  (void)elapsed;
  // Required parts of the message, separated by ','; '_' stands for a space.
  std::string expect = opt_str("expect", "");
  std::replace(expect.begin(), expect.end(), '_', ' ');
  for (size_t start = 0; start <= expect.size();) {
    size_t end = std::min(expect.find(',', start), expect.size());
    std::string part = expect.substr(start, end - start);
    CHECK(contains(msg, part), "message lacks '%s': %s", part.c_str(), msg.c_str());
    start = end + 1;
  }
  CHECK(same_everywhere(msg + cohort_status_string(s)), "ranks disagree: %s", msg.c_str());
  if (g_rank == 0) printf("every rank: %s: %s\n", cohort_status_string(s), msg.c_str());
  // The job goes on: a creation without the fault works.
  unsetenv("COHORT_INJECT_FAILURE");
  unsetenv("COHORT_TOPO_FILE");
  cohort::Team team(MPI_COMM_WORLD);
  CHECK(team.size() == g_size, "team after failure");
}

// ------------------------------------------------------------ host collectives

// Rank r's input element i: small, 1 or 2 for products (no overflow but int8's wrap).
double input_value(int r, size_t i, cohort_op_t op) {
  return op == COHORT_PROD ? 1 + (r + i) % 2 : static_cast<double>((r * 7 + i * 3) % 13 + 1);
}

// The reduction of element i over all ranks, as the dtype holds it.
double reduced_value(cohort_dtype_t t, cohort_op_t op, size_t i, int n) {
  double acc = input_value(0, i, op);
  for (int q = 1; q < n; ++q) {
    double v = input_value(q, i, op);
    acc = op == COHORT_PROD  ? acc * v
          : op == COHORT_MIN ? std::min(acc, v)
          : op == COHORT_MAX ? std::max(acc, v)
                             : acc + v;
  }
  if (op == COHORT_AVG) acc = is_float(t) ? acc / n : std::trunc(acc / n);
  std::vector<char> cell(8);
  store(t, cell.data(), 0, acc);  // wraps like the dtype (int8 products)
  return is_float(t) && op == COHORT_AVG ? acc : load(t, cell.data(), 0);
}

bool close_enough(cohort_dtype_t t, double got, double want) {
  double tolerance = t == COHORT_FLOAT16 || t == COHORT_BFLOAT16 ? 1e-2
                     : t == COHORT_FLOAT32                       ? 1e-6
                                                                 : 1e-12;
  return fabs(got - want) <= tolerance * std::max(1.0, fabs(want));
}

struct CollCase {
  const char *name;
  int kind;  // 0 allreduce, 1 reduce, 2 broadcast, 3 allgather, 4 reduce-scatter, 5 alltoall
  cohort_dtype_t dtype;
  cohort_op_t op;
  size_t count;
  bool in_place;
  int root;
};

// Runs one collective on every rank and checks this rank's output; returns the bad elements.
long run_coll_case(cohort_team_t team, const CollCase &c) {
  const int n = g_size, r = g_rank;
  const size_t e = elem_bytes(c.dtype), count = c.count;
  const bool blocks_in = c.kind == 4 || c.kind == 5, blocks_out = c.kind == 3 || c.kind == 5;
  const size_t in_n = blocks_in ? count * n : count, out_n = blocks_out ? count * n : count;
  std::vector<char> in(in_n * e + 8), out(std::max(in_n, out_n) * e + 8);
  for (size_t i = 0; i < in_n; ++i) store(c.dtype, in.data(), i, input_value(r, i, c.op));
  for (size_t i = 0; i < out_n; ++i) store(c.dtype, out.data(), i, -1);
  const void *send = in.data();
  void *recv = out.data();
  if (c.in_place) {
    if (c.kind == 3) {  // allgather: own block at its slot of the output
      memcpy(out.data() + r * count * e, in.data(), count * e);
      send = out.data() + r * count * e;
    } else if (c.kind == 4) {  // reduce-scatter: output is the rank's block of the input
      out = in;
      send = out.data();
      recv = out.data() + r * count * e;
    } else {
      memcpy(out.data(), in.data(), in_n * e);
      send = out.data();
    }
  }
  cohort_status_t s = COHORT_SUCCESS;
  switch (c.kind) {
    case 0: s = cohort_allreduce(team, send, recv, count, c.dtype, c.op); break;
    case 1: s = cohort_reduce(team, send, recv, count, c.dtype, c.op, c.root); break;
    case 2: s = cohort_broadcast(team, send, recv, count, c.dtype, c.root); break;
    case 3: s = cohort_allgather(team, send, recv, count, c.dtype); break;
    case 4: s = cohort_reduce_scatter(team, send, recv, count, c.dtype, c.op); break;
    case 5: s = cohort_alltoall(team, send, recv, count, c.dtype); break;
  }
  CHECK(s == COHORT_SUCCESS, "%s: %s", c.name, cohort_last_error());
  if (s != COHORT_SUCCESS) return 1;
  long wrong = 0;
  const char *got = static_cast<const char *>(recv);
  for (size_t i = 0; i < count; ++i) {
    switch (c.kind) {
      case 0:
        wrong += !close_enough(c.dtype, load(c.dtype, got, i), reduced_value(c.dtype, c.op, i, n));
        break;
      case 1:
        if (r == c.root)
          wrong +=
              !close_enough(c.dtype, load(c.dtype, got, i), reduced_value(c.dtype, c.op, i, n));
        break;
      case 2: wrong += load(c.dtype, got, i) != input_value(c.root, i, c.op); break;
      case 3:
        for (int q = 0; q < n; ++q)
          wrong += load(c.dtype, got, q * count + i) != input_value(q, i, c.op);
        break;
      case 4:
        wrong += !close_enough(c.dtype, load(c.dtype, got, i),
                               reduced_value(c.dtype, c.op, r * count + i, n));
        break;
      case 5:
        for (int q = 0; q < n; ++q)
          wrong += load(c.dtype, got, q * count + i) != input_value(q, r * count + i, c.op);
        break;
    }
  }
  return wrong;
}

// Every collective x dtype x op x count x in place / not against values computed here.
// --quick: a smaller matrix (sanitizer builds).  --per-node K: fake hosts of K ranks each
// (COHORT_HOST_ID), so ranks on different hosts talk over UCX.
void scenario_coll() {
  const int per_node = opt_int("per-node", 0);
  std::string host = "coll-node-" + std::to_string(per_node > 0 ? g_rank / per_node : 0);
  ScopedEnv host_env("COHORT_HOST_ID", per_node > 0 ? host.c_str() : getenv("COHORT_HOST_ID"));
  cohort::Team team(MPI_COMM_WORLD);
  if (per_node > 0) {
    const int nodes = (g_size + per_node - 1) / per_node;
    CHECK(team.node_count() == nodes, "node count %d, expected %d", team.node_count(), nodes);
  }
  const bool quick = opt_int("quick", 0) != 0;
  const char *kinds[] = {"allreduce", "reduce",         "broadcast",
                         "allgather", "reduce_scatter", "alltoall"};
  std::vector<size_t> counts = {0, 1, 7, 1023, 65537, size_t{1} << 20};
  if (quick) counts = {0, 7, 1023};
  long cases = 0, wrong = 0;
  for (int kind = 0; kind < 6; ++kind) {
    for (int t = 0; t < COHORT_NUM_DTYPES; ++t) {
      bool reduction = kind == 0 || kind == 1 || kind == 4;
      for (int op = 0; op < (reduction ? COHORT_NUM_OPS : 1); ++op) {
        for (size_t count : counts) {
          // Blocks of every rank: 1<<20 in all, or 4099 each for 65537.
          if (kind >= 3 && count == 65537) count = 4099;
          if (kind >= 3 && count == size_t{1} << 20) count = (size_t{1} << 20) / g_size;
          for (bool in_place : {false, true}) {
            CollCase c{kinds[kind],
                       kind,
                       static_cast<cohort_dtype_t>(t),
                       static_cast<cohort_op_t>(op),
                       count,
                       in_place,
                       g_size - 1};
            long bad = run_coll_case(team.get(), c);
            ++cases;
            if (bad > 0) {
              CHECK(false, "%s %s op %d count %zu%s: %ld wrong elements", c.name,
                    std::to_string(t).c_str(), op, count, in_place ? " in place" : "", bad);
            }
            wrong += bad;
          }
        }
      }
    }
  }
  CHECK_STATUS(cohort_barrier(team.get()), COHORT_SUCCESS);
  // Bad arguments: named errors, nothing written.
  int x = 0;
  CHECK_STATUS(cohort_allreduce(team.get(), nullptr, &x, 1, COHORT_INT32, COHORT_SUM),
               COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_allreduce(team.get(), &x, &x, 1, static_cast<cohort_dtype_t>(42), COHORT_SUM),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "dtype=42"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_allreduce(team.get(), &x, &x, 1, static_cast<cohort_dtype_t>(-7), COHORT_SUM),
               COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "dtype=-7"), "message: %s", cohort_last_error());
  CHECK_STATUS(
      cohort_allreduce(team.get(), &x, &x, 1, COHORT_INT32, static_cast<cohort_op_t>(INT_MAX)),
      COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "op=2147483647"), "message: %s", cohort_last_error());
  CHECK(x == 0, "a rejected call wrote %d", x);
  CHECK_STATUS(cohort_broadcast(team.get(), &x, &x, 1, COHORT_INT32, g_size),
               COHORT_ERR_INVALID_ARG);
  if (g_rank == 0) printf("%ld collective calls checked, %ld wrong elements\n", cases, wrong);
}

// Posted collectives: several in flight at once complete in posting order whichever request
// is tested first; a blocking call queues behind them; a request freed unfinished still runs;
// a request outlives cohort_team_destroy; bad handles are named errors.
void scenario_coll_post() {
  const int per_node = opt_int("per-node", 0);
  std::string host = "post-node-" + std::to_string(per_node > 0 ? g_rank / per_node : 0);
  ScopedEnv host_env("COHORT_HOST_ID", per_node > 0 ? host.c_str() : getenv("COHORT_HOST_ID"));
  cohort_team_t team = nullptr;
  cohort_team_config_t cfg = config_with_timeout(30);
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  if (team == nullptr) return;
  const int n = g_size;
  std::vector<int64_t> sum(4096, g_rank + 1), bcast(1000, g_rank == 0 ? 7 : -1);
  std::vector<int32_t> mine(300, g_rank), all(300 * n, -1);
  cohort_request_t r[4] = {};
  CHECK_STATUS(cohort_allreduce_post(team, sum.data(), sum.data(), sum.size(), COHORT_INT64,
                                     COHORT_SUM, &r[0]),
               COHORT_SUCCESS);
  CHECK_STATUS(
      cohort_broadcast_post(team, bcast.data(), bcast.data(), bcast.size(), COHORT_INT64, 0, &r[1]),
      COHORT_SUCCESS);
  CHECK_STATUS(
      cohort_allgather_post(team, mine.data(), all.data(), mine.size(), COHORT_INT32, &r[2]),
      COHORT_SUCCESS);
  CHECK_STATUS(cohort_barrier_post(team, &r[3]), COHORT_SUCCESS);
  // Wait for the last first: the earlier ones must have run before it.
  CHECK_STATUS(cohort_request_wait(r[3]), COHORT_SUCCESS);
  for (int k = 2; k >= 0; --k) CHECK_STATUS(cohort_request_test(r[k]), COHORT_SUCCESS);
  long bad = 0;
  for (int64_t v : sum) bad += v != static_cast<int64_t>(n) * (n + 1) / 2;
  for (int64_t v : bcast) bad += v != 7;
  for (int q = 0; q < n; ++q) bad += all[q * 300 + 299] != q || all[q * 300] != q;
  CHECK(bad == 0, "%ld wrong elements after posted collectives", bad);
  for (cohort_request_t &req : r) CHECK_STATUS(cohort_request_free(req), COHORT_SUCCESS);
  CHECK_STATUS(cohort_request_free(r[0]), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "not a live request"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_request_test(nullptr), COHORT_ERR_INVALID_ARG);
  // Freed unfinished: it still runs, before the blocking call behind it.
  int64_t a = g_rank, b = 0;
  cohort_request_t freed = nullptr;
  CHECK_STATUS(cohort_allreduce_post(team, &a, &a, 1, COHORT_INT64, COHORT_MAX, &freed),
               COHORT_SUCCESS);
  CHECK_STATUS(cohort_request_free(freed), COHORT_SUCCESS);
  CHECK_STATUS(cohort_allreduce(team, &a, &b, 1, COHORT_INT64, COHORT_SUM), COHORT_SUCCESS);
  CHECK(a == n - 1 && b == static_cast<int64_t>(n) * (n - 1), "freed request: a %lld b %lld",
        static_cast<long long>(a), static_cast<long long>(b));
  // A request keeps its team: destroy, then wait.
  int64_t c = 1;
  cohort_request_t late = nullptr;
  CHECK_STATUS(cohort_allreduce_post(team, &c, &c, 1, COHORT_INT64, COHORT_SUM, &late),
               COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  CHECK_STATUS(cohort_request_wait(late), COHORT_SUCCESS);
  CHECK(c == n, "allreduce after destroy: %lld", static_cast<long long>(c));
  CHECK_STATUS(cohort_request_free(late), COHORT_SUCCESS);
}

// Send/recv: a ring shift of 1 MiB (larger than any channel: only a group can do it), an
// alltoallv with a different size per pair and self included, blocking pairs, and errors.
void scenario_p2p() {
  const int per_node = opt_int("per-node", 0);
  std::string host = "p2p-node-" + std::to_string(per_node > 0 ? g_rank / per_node : 0);
  ScopedEnv host_env("COHORT_HOST_ID", per_node > 0 ? host.c_str() : getenv("COHORT_HOST_ID"));
  cohort::Team team(MPI_COMM_WORLD);
  const int n = g_size, r = g_rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<int32_t> out(1 << 18), in(1 << 18, -1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(r * 1000003 + i);
  CHECK_STATUS(cohort_group_start(), COHORT_SUCCESS);
  CHECK_STATUS(cohort_send(team.get(), out.data(), out.size(), COHORT_INT32, next), COHORT_SUCCESS);
  CHECK_STATUS(cohort_recv(team.get(), in.data(), in.size(), COHORT_INT32, prev), COHORT_SUCCESS);
  CHECK_STATUS(cohort_group_end(), COHORT_SUCCESS);
  long bad = 0;
  for (size_t i = 0; i < in.size(); ++i) bad += in[i] != static_cast<int32_t>(prev * 1000003 + i);
  CHECK(bad == 0, "ring shift: %ld wrong elements", bad);
  // alltoallv: r sends (r + 1) * (q + 1) * 100 doubles to q, self included, nested groups.
  auto bytes_of = [](int from, int to) { return static_cast<size_t>((from + 1) * (to + 1) * 100); };
  std::vector<std::vector<double>> to(n), from(n);
  CHECK_STATUS(cohort_group_start(), COHORT_SUCCESS);
  for (int q = 0; q < n; ++q) {
    to[q].assign(bytes_of(r, q), r + q * 0.5);
    from[q].assign(bytes_of(q, r), -1);
    CHECK_STATUS(cohort_group_start(), COHORT_SUCCESS);
    CHECK_STATUS(cohort_send(team.get(), to[q].data(), to[q].size(), COHORT_FLOAT64, q),
                 COHORT_SUCCESS);
    CHECK_STATUS(cohort_group_end(), COHORT_SUCCESS);  // inner end: nothing runs yet
  }
  for (int q = n - 1; q >= 0; --q) {
    CHECK_STATUS(cohort_recv(team.get(), from[q].data(), from[q].size(), COHORT_FLOAT64, q),
                 COHORT_SUCCESS);
  }
  CHECK_STATUS(cohort_group_end(), COHORT_SUCCESS);
  bad = 0;
  for (int q = 0; q < n; ++q) {
    for (double v : from[q]) bad += v != q + r * 0.5;
  }
  CHECK(bad == 0, "alltoallv: %ld wrong elements", bad);
  // Blocking pairs: even ranks send a small message to the next odd one.
  int64_t word = 1000 + r;
  if (r % 2 == 0 && r + 1 < n) {
    CHECK_STATUS(cohort_send(team.get(), &word, 1, COHORT_INT64, r + 1), COHORT_SUCCESS);
  } else if (r % 2 == 1) {
    CHECK_STATUS(cohort_recv(team.get(), &word, 1, COHORT_INT64, r - 1), COHORT_SUCCESS);
    CHECK(word == 1000 + r - 1, "blocking recv got %lld", static_cast<long long>(word));
  }
  // Errors: named, and a group with a bad operation runs nothing (on every rank alike here).
  CHECK_STATUS(cohort_recv(team.get(), &word, 1, COHORT_INT64, n), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "outside the team"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_group_end(), COHORT_ERR_INVALID_USAGE);
  CHECK_STATUS(cohort_group_start(), COHORT_SUCCESS);
  CHECK_STATUS(cohort_send(team.get(), out.data(), out.size(), COHORT_INT32, next), COHORT_SUCCESS);
  CHECK_STATUS(cohort_send(team.get(), nullptr, 4, COHORT_INT32, next), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_group_end(), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "ran nothing"), "message: %s", cohort_last_error());
  CHECK_STATUS(cohort_group_start(), COHORT_SUCCESS);
  CHECK_STATUS(cohort_recv(team.get(), in.data(), 1, COHORT_INT32, r), COHORT_SUCCESS);
  CHECK_STATUS(cohort_group_end(), COHORT_ERR_INVALID_USAGE);
  CHECK(contains(cohort_last_error(), "receive from self"), "message: %s", cohort_last_error());
  // The team still works after refused groups (nothing was sent).
  CHECK_STATUS(cohort_barrier(team.get()), COHORT_SUCCESS);
}

// COHORT_COLL_ALGO: a bad rule, or a value that differs on one rank, fails creation on every
// rank with the same named error (ranks choosing differently would wait on each other).
void scenario_algo_env() {
  cohort_team_config_t cfg = config_with_timeout(30);
  {
    ScopedEnv bad("COHORT_COLL_ALGO", "allreduce=tree");
    auto [s, msg, elapsed] = create_expecting_failure(cfg);
    CHECK(s == COHORT_ERR_INVALID_ARG, "bad rule: %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(contains(msg, "no algorithm 'tree' for allreduce"), "message: %s", msg.c_str());
    CHECK(same_everywhere(msg), "ranks disagree: %s", msg.c_str());
  }
  if (g_size > 1) {
    ScopedEnv differs("COHORT_COLL_ALGO", g_rank == 1 ? "allreduce=ring" : nullptr);
    auto [s, msg, elapsed] = create_expecting_failure(cfg);
    CHECK(s == COHORT_ERR_INVALID_USAGE, "differing: %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(contains(msg, "differs between ranks") && contains(msg, "rank 1"), "message: %s",
          msg.c_str());
    CHECK(same_everywhere(msg), "ranks disagree: %s", msg.c_str());
    if (g_rank == 0) printf("every rank: %s\n", msg.c_str());
  }
  if (g_size > 1) {  // the single-copy threshold decides the bytes on the wire: also agreed
    ScopedEnv differs("COHORT_SHM_SINGLE_COPY_BYTES", g_rank == 1 ? "4096" : nullptr);
    auto [s, msg, elapsed] = create_expecting_failure(cfg);
    CHECK(s == COHORT_ERR_INVALID_USAGE && contains(msg, "COHORT_SHM_SINGLE_COPY_BYTES"),
          "differing threshold: %s: %s", cohort_status_string(s), msg.c_str());
  }
  // The same rules everywhere work, and force the algorithm: ring below the direct cut-off.
  ScopedEnv good("COHORT_COLL_ALGO", "allreduce=ring; broadcast:0-1K=chain");
  cohort::Team team(MPI_COMM_WORLD);
  int64_t x = g_rank + 1;
  CHECK_STATUS(cohort_allreduce(team.get(), &x, &x, 1, COHORT_INT64, COHORT_SUM), COHORT_SUCCESS);
  CHECK(x == static_cast<int64_t>(g_size) * (g_size + 1) / 2, "allreduce %lld",
        static_cast<long long>(x));
}

// A rank that skips a collective: the others fail after COHORT_COLL_TIMEOUT naming it.
void scenario_coll_missing() {
  int skip = opt_int("skip", 1);
  cohort::Team team(MPI_COMM_WORLD);
  if (g_rank != skip) {
    std::vector<float> v(1024, 1.0f);
    double t0 = now_s();
    cohort_status_t s =
        cohort_allreduce(team.get(), v.data(), v.data(), v.size(), COHORT_FLOAT32, COHORT_SUM);
    double elapsed = now_s() - t0;
    std::string msg = cohort_last_error();
    CHECK(s == COHORT_ERR_TIMEOUT, "status %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(elapsed < 1.0 + 2.0, "failed after %.2f s", elapsed);
    if (g_rank == (skip == 0 ? 1 : 0)) printf("rank %d: %s\n", g_rank, msg.c_str());
    // Its channels hold part of that exchange: the team refuses more, saying why.
    CHECK_STATUS(cohort_barrier(team.get()), COHORT_ERR_INVALID_USAGE);
    CHECK(contains(cohort_last_error(), "after an earlier one failed"), "message: %s",
          cohort_last_error());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Fake nodes: COHORT_HOST_ID from a per-rank pattern.  --per-node K: blocks of K ranks;
// --interleave K: rank % K.
void scenario_fake_nodes() {
  int per_node = opt_int("per-node", 0), interleave = opt_int("interleave", 0);
  auto node_of = [&](int r) { return per_node > 0 ? r / per_node : r % interleave; };
  std::string host = "fake-node-" + std::to_string(node_of(g_rank));
  ScopedEnv host_env("COHORT_HOST_ID", host.c_str());
  cohort::Team team(MPI_COMM_WORLD);
  // Expected: nodes numbered by their lowest rank; local rank = order within the node.
  std::map<int, int> first_seen;
  std::vector<int> local(g_size), count_on(g_size, 0), node_index(g_size);
  for (int r = 0; r < g_size; ++r) {
    int n = node_of(r);
    if (!first_seen.count(n)) first_seen[n] = static_cast<int>(first_seen.size());
    node_index[r] = first_seen[n];
    local[r] = count_on[node_index[r]]++;
  }
  int nodes = static_cast<int>(first_seen.size());
  CHECK(team.node_count() == nodes, "node count %d expected %d", team.node_count(), nodes);
  CHECK(team.node_index() == node_index[g_rank], "node index %d expected %d", team.node_index(),
        node_index[g_rank]);
  CHECK(team.local_rank() == local[g_rank], "local rank %d expected %d", team.local_rank(),
        local[g_rank]);
  CHECK(team.local_size() == count_on[node_index[g_rank]], "local size %d expected %d",
        team.local_size(), count_on[node_index[g_rank]]);
  for (int r = 0; r < g_size; ++r) {
    cohort_peer_info_t p = team.peer(r);
    CHECK(p.node_index == node_index[r] && p.local_rank == local[r], "peer %d node/local", r);
    CHECK(std::string(p.hostname) == "fake-node-" + std::to_string(node_of(r)), "peer %d host %s",
          r, p.hostname);
  }
}

// Open MPI hands out the lowest free Fortran handle index to a new communicator or group: if
// the indices of fresh objects grew over the cycles, some were never freed.  A freed
// communicator stays allocated while sends on it are still being completed, so first let
// every rank receive everything (barrier) and let Cohort reap its finished sends (any team
// creation does; one on MPI_COMM_SELF sends nothing new).
int fresh_mpi_handle_index() {
  MPI_Barrier(MPI_COMM_WORLD);
  cohort_team_config_t self_cfg;
  cohort_team_config_init(&self_cfg);
  self_cfg.cuda_device = COHORT_DEVICE_NONE;
  cohort_team_t self_team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_SELF, &self_cfg, &self_team), COHORT_SUCCESS);
  if (self_team != nullptr) cohort_team_destroy(self_team);
  MPI_Comm comm;
  MPI_Group group;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_group(comm, &group);
  int index =
      static_cast<int>(MPI_Comm_c2f(comm)) * 100000 + static_cast<int>(MPI_Group_c2f(group));
  MPI_Group_free(&group);
  MPI_Comm_free(&comm);
  return index;
}

void scenario_cycles() {
  int cycles = opt_int("count", 1000);
  cohort_team_config_t cfg = config_with_timeout(60);
  auto cycle = [&] {
    cohort_team_t team = nullptr;
    cohort_status_t s = cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team);
    if (s != COHORT_SUCCESS) {
      CHECK(false, "create: %s %s", cohort_status_string(s), cohort_last_error());
      return false;
    }
    return cohort_team_destroy(team) == COHORT_SUCCESS;
  };
  // Every tenth cycle also splits, so child teams (groups, created communicators) are counted.
  auto split_cycle = [&] {
    cohort::Team parent(MPI_COMM_WORLD, &cfg);
    cohort::Team child = parent.split(g_rank % 2, g_rank);
    return static_cast<bool>(child);
  };
  for (int i = 0; i < 20; ++i) cycle();  // warm up MPI's own lazily created resources
  split_cycle();
  // Its team on MPI_COMM_SELF makes every rank a host leader once, so each process's one-time
  // topology detection (hwloc, CUDA, NVML: an fd and ~15 MiB on a GPU host) is behind us.
  int handles_before = fresh_mpi_handle_index();
  int fds_before = count_open_fds();
  long rss_before = rss_kib();
  double t0 = now_s();
  for (int i = 0; i < cycles; ++i) {
    if (!cycle() || (i % 10 == 0 && !split_cycle())) break;
  }
  double elapsed = now_s() - t0;
  int fds_after = count_open_fds();
  long rss_after = rss_kib();
  int handles_after = fresh_mpi_handle_index();
  CHECK(fds_after == fds_before, "fds %d -> %d over %d cycles", fds_before, fds_after, cycles);
  CHECK(handles_after == handles_before, "MPI handle index %d -> %d: communicators or groups leak",
        handles_before, handles_after);
  CHECK(rss_after - rss_before < 4096, "RSS grew %ld KiB over %d cycles", rss_after - rss_before,
        cycles);
  if (g_rank == 0) {
    printf(
        "%d create/destroy cycles (+%d splits) in %.2f s: fds %d -> %d, RSS %ld -> %ld KiB, "
        "MPI handle index %d -> %d\n",
        cycles, (cycles + 9) / 10, elapsed, fds_before, fds_after, rss_before, rss_after,
        handles_before, handles_after);
  }
}

void scenario_bad_input() {
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, nullptr, nullptr), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "team (output)"), "%s", cohort_last_error());
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_NULL, nullptr, &team), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "MPI_COMM_NULL"), "%s", cohort_last_error());
  CHECK_STATUS(cohort_team_create_oob(nullptr, nullptr, &team), COHORT_ERR_INVALID_ARG);
  cohort_oob_t oob{};
  oob.size = 2;
  CHECK_STATUS(cohort_team_create_oob(&oob, nullptr, &team), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "oob->allgather"), "%s", cohort_last_error());
  CHECK_STATUS(cohort_team_size(nullptr, nullptr), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_destroy(nullptr), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_abort(reinterpret_cast<cohort_team_t>(0x1234)), COHORT_ERR_INVALID_ARG);
  CHECK(team == nullptr, "a failed call wrote the output");
  CHECK_STATUS(cohort_team_config_init(nullptr), COHORT_ERR_INVALID_ARG);

  // A bad config on one rank: every rank fails alike, naming that rank and the field.
  int bad = g_size - 1;
  cohort_team_config_t cfg = config_with_timeout(20);
  if (g_rank == bad) cfg.magic = 0;
  cohort_status_t s = cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team);
  std::string msg = cohort_last_error();
  CHECK(s == COHORT_ERR_INVALID_ARG, "bad magic: %s %s", cohort_status_string(s), msg.c_str());
  CHECK(contains(msg, "rank " + std::to_string(bad)) && contains(msg, "config->magic"),
        "bad magic message: %s", msg.c_str());
  CHECK(same_everywhere(msg), "ranks disagree on bad config: %s", msg.c_str());

  // A bad environment value on one rank: named likewise.
  cfg = config_with_timeout(20);
  {
    const char *value = getenv("COHORT_ALLOW_SHARED_GPU");
    ScopedEnv bad_env("COHORT_ALLOW_SHARED_GPU", g_rank == bad ? "maybe" : value);
    s = cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team);
    msg = cohort_last_error();
  }
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(msg, "COHORT_ALLOW_SHARED_GPU='maybe'") &&
            contains(msg, "rank " + std::to_string(bad)),
        "bad env: %s %s", cohort_status_string(s), msg.c_str());

  // Calls on a destroyed team, a second destroy, out-of-range peers, NULL outputs.
  CHECK_STATUS(cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team), COHORT_SUCCESS);
  cohort_peer_info_t info;
  CHECK_STATUS(cohort_team_peer_info(team, g_size, &info), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_peer_info(team, 0, nullptr), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_init_report(team, nullptr), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_split(team, 0, 0, nullptr, nullptr), COHORT_ERR_INVALID_ARG);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  int size = 0;
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_ERR_INVALID_ARG);
  CHECK(contains(cohort_last_error(), "not a live team"), "%s", cohort_last_error());
  CHECK_STATUS(cohort_team_destroy(team), COHORT_ERR_INVALID_ARG);
  cohort_team_t child = nullptr;
  CHECK_STATUS(cohort_team_split(team, 0, 0, nullptr, &child), COHORT_ERR_INVALID_ARG);
}

// A caller-supplied OOB: MPI_Iallgather on a duplicate communicator.
cohort_status_t oob_allgather(const void *sbuf, void *rbuf, size_t len, void *info, void **req) {
  auto *request = new MPI_Request;
  MPI_Iallgather(sbuf, static_cast<int>(len), MPI_BYTE, rbuf, static_cast<int>(len), MPI_BYTE,
                 *static_cast<MPI_Comm *>(info), request);
  *req = request;
  return COHORT_SUCCESS;
}
cohort_status_t oob_test(void *req) {
  int done = 0;
  MPI_Test(static_cast<MPI_Request *>(req), &done, MPI_STATUS_IGNORE);
  return done ? COHORT_SUCCESS : COHORT_IN_PROGRESS;
}
cohort_status_t oob_free(void *req) {
  delete static_cast<MPI_Request *>(req);
  return COHORT_SUCCESS;
}

void scenario_oob() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  cohort_oob_t oob{oob_allgather,
                   oob_test,
                   oob_free,
                   &comm,
                   static_cast<uint32_t>(g_size),
                   static_cast<uint32_t>(g_rank)};
  cohort_team_t team = nullptr;
  CHECK_STATUS(cohort_team_create_oob(&oob, nullptr, &team), COHORT_SUCCESS);
  int size = 0, rank = -1;
  CHECK_STATUS(cohort_team_size(team, &size), COHORT_SUCCESS);
  CHECK_STATUS(cohort_team_rank(team, &rank), COHORT_SUCCESS);
  CHECK(size == g_size && rank == g_rank, "oob team %d/%d", rank, size);
  cohort_team_t child = nullptr;
  CHECK_STATUS(cohort_team_split(team, 0, 0, nullptr, &child), COHORT_ERR_NOT_SUPPORTED);
  CHECK_STATUS(cohort_team_destroy(team), COHORT_SUCCESS);
  MPI_Comm_free(&comm);
}

// Run before MPI_Init: creation must refuse with a named error.
void scenario_before_init() {
  cohort_team_t team = nullptr;
  cohort_status_t s = cohort_team_create_mpi(MPI_COMM_WORLD, nullptr, &team);
  CHECK(s == COHORT_ERR_INVALID_USAGE && contains(cohort_last_error(), "MPI_Init"),
        "before MPI_Init: %s %s", cohort_status_string(s), cohort_last_error());
}

// GPU scenarios (skip without a GPU): two+ ranks on one GPU.
bool have_gpu() {
#if COHORT_TEST_HAVE_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

// A team bound to the GPU: host, pinned, managed and device buffers work; device memory with
// host memory, and a collective the GPU does not run yet, get named errors.
void scenario_gpu_coll() {
#if COHORT_TEST_HAVE_CUDA
  ScopedEnv shared("COHORT_ALLOW_SHARED_GPU", "1");
  cudaSetDevice(0);
  cohort::Team team(MPI_COMM_WORLD);
  std::vector<int> host(64, g_rank + 1);
  CHECK_STATUS(cohort_allreduce(team.get(), host.data(), host.data(), 64, COHORT_INT32, COHORT_SUM),
               COHORT_SUCCESS);
  CHECK(host[63] == g_size * (g_size + 1) / 2, "host allreduce gave %d", host[63]);
  int *managed = nullptr, *device = nullptr;
  CHECK(cudaMallocManaged(reinterpret_cast<void **>(&managed), 64 * sizeof(int)) == cudaSuccess,
        "cudaMallocManaged");
  CHECK(cudaMalloc(reinterpret_cast<void **>(&device), 64 * sizeof(int)) == cudaSuccess,
        "cudaMalloc");
  if (managed != nullptr) {
    for (int i = 0; i < 64; ++i) managed[i] = 1;
    CHECK_STATUS(cohort_allreduce(team.get(), managed, managed, 64, COHORT_INT32, COHORT_SUM),
                 COHORT_SUCCESS);
    CHECK(managed[0] == g_size, "managed allreduce gave %d", managed[0]);
  }
  if (device != nullptr) {
    // Device memory with host memory: refused, naming both kinds.
    CHECK_STATUS(cohort_allreduce(team.get(), host.data(), device, 64, COHORT_INT32, COHORT_SUM),
                 COHORT_ERR_NOT_SUPPORTED);
    CHECK(contains(cohort_last_error(), "sendbuf is host memory and recvbuf cuda-device"),
          "message: %s", cohort_last_error());
    if (g_rank == 0) printf("device and host buffer: %s\n", cohort_last_error());
    // Device memory on both sides: the GPU kernels.
    std::vector<int> ones(64, 1), back(64, 0);
    cudaMemcpy(device, ones.data(), 64 * sizeof(int), cudaMemcpyHostToDevice);
    CHECK_STATUS(cohort_allreduce(team.get(), device, device, 64, COHORT_INT32, COHORT_SUM),
                 COHORT_SUCCESS);
    cudaMemcpy(back.data(), device, 64 * sizeof(int), cudaMemcpyDeviceToHost);
    CHECK(back[0] == g_size && back[63] == g_size, "device allreduce gave %d, %d", back[0],
          back[63]);
    // A collective the GPU does not run yet: named.
    CHECK_STATUS(cohort_broadcast(team.get(), device, device, 64, COHORT_INT32, 0),
                 COHORT_ERR_NOT_SUPPORTED);
    CHECK(contains(cohort_last_error(), "broadcast on GPU device memory"), "message: %s",
          cohort_last_error());
    if (g_rank == 0) printf("device broadcast: %s\n", cohort_last_error());
  }
  // Pinned host memory is host memory to the host algorithms.
  int *pinned = nullptr;
  CHECK(cudaMallocHost(reinterpret_cast<void **>(&pinned), 64 * sizeof(int)) == cudaSuccess,
        "cudaMallocHost");
  if (pinned != nullptr) {
    cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
    CHECK_STATUS(cohort_memory_kind(pinned, &kind), COHORT_SUCCESS);
    CHECK(kind == COHORT_MEMORY_CUDA_HOST, "pinned memory is %s", cohort_memory_kind_name(kind));
    for (int i = 0; i < 64; ++i) pinned[i] = 2;
    CHECK_STATUS(cohort_allreduce(team.get(), pinned, pinned, 64, COHORT_INT32, COHORT_SUM),
                 COHORT_SUCCESS);
    CHECK(pinned[63] == 2 * g_size, "pinned allreduce gave %d", pinned[63]);
  }
  cudaFreeHost(pinned);
  cudaFree(managed);
  cudaFree(device);
#endif
}

void scenario_shared_gpu(bool allowed) {
  ScopedEnv sharing("COHORT_ALLOW_SHARED_GPU", allowed ? "1" : "0");
  cohort_team_config_t cfg = config_with_timeout(60);
  cohort_team_t team = nullptr;
  cohort_status_t s = cohort_team_create_mpi(MPI_COMM_WORLD, &cfg, &team);
  std::string msg = cohort_last_error();
  if (!allowed) {
    CHECK(s == COHORT_ERR_INVALID_USAGE, "status %s: %s", cohort_status_string(s), msg.c_str());
    CHECK(contains(msg, "same GPU") && contains(msg, "ranks 0") &&
              contains(msg, "CUDA_VISIBLE_DEVICES=") && contains(msg, "COHORT_ALLOW_SHARED_GPU=1"),
          "message: %s", msg.c_str());
    CHECK(same_everywhere(msg), "ranks disagree");
    if (g_rank == 0)
      printf("duplicate GPU, every rank: %s: %s\n", cohort_status_string(s), msg.c_str());
    return;
  }
  CHECK(s == COHORT_SUCCESS, "status %s: %s", cohort_status_string(s), msg.c_str());
  if (team == nullptr) return;
  cohort_peer_info_t self, first;
  cohort_team_peer_info(team, g_rank, &self);
  cohort_team_peer_info(team, 0, &first);
  CHECK(self.bus_id[0] != '\0' && strcmp(self.bus_id, first.bus_id) == 0, "bus ids %s vs %s",
        self.bus_id, first.bus_id);
  CHECK(memcmp(self.uuid, first.uuid, 16) == 0, "UUIDs differ");
  CHECK(same_everywhere(std::string(self.bus_id) + std::string((char *)self.uuid, 16)),
        "bus id / UUID differ across ranks");
  if (g_rank == 0) {
    for (int r = 0; r < g_size; ++r) {
      cohort_peer_info_t p;
      cohort_team_peer_info(team, r, &p);
      printf("shared GPU allowed: rank %d cuda %d bus %s uuid ", r, p.cuda_device, p.bus_id);
      for (int i = 0; i < 16; ++i) printf("%02x", p.uuid[i]);
      printf(" numa %d\n", p.numa_node);
    }
  }
  cohort_team_destroy(team);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "before-init") == 0) scenario_before_init();
  const Scenarios scenarios = {
      {"before-init", [] {}},
      {"create", scenario_create},
      {"split", scenario_split},
      {"nonblocking", scenario_nonblocking},
      {"abort", scenario_abort},
      {"two-posted", scenario_two_posted},
      {"missing", scenario_missing},
      {"inject", scenario_inject},
      {"split-missing", scenario_split_missing},
      {"abort-one", scenario_abort_one},
      {"after-finalize", scenario_after_finalize},
      {"stall", scenario_stall},
      {"fake-nodes", scenario_fake_nodes},
      {"plan", scenario_plan},
      {"plan-fails", scenario_plan_fails},
      {"plan-graph-file", scenario_plan_graph_file},
      {"coll", scenario_coll},
      {"algo-env", scenario_algo_env},
      {"coll-post", scenario_coll_post},
      {"p2p", scenario_p2p},
      {"coll-missing", scenario_coll_missing},
      {"cycles", scenario_cycles},
      {"bad-input", scenario_bad_input},
      {"oob", scenario_oob},
      {"gpu-duplicate", [] { scenario_shared_gpu(false); }},
      {"gpu-shared", [] { scenario_shared_gpu(true); }},
      {"gpu-coll", scenario_gpu_coll},
  };
  return run_main(argc, argv, scenarios, [](const std::string &scenario) -> std::string {
    if (scenario.rfind("gpu-", 0) != 0 || have_gpu()) return "";
    return scenario + " needs a CUDA GPU on every rank";
  });
}
