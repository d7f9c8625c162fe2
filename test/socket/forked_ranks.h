// What the tests whose ranks are forked processes share (no mpirun, no MPI): per-rank checks
// that count failures, the unique id's pipe from its maker to the others (writes of 128 bytes
// are atomic, as any launcher's channel would carry it), and the fork-and-wait of a run.
// test/socket's unique_id_test and test/nccl's nccl_api_test include it.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace forked {

inline int g_failures = 0;
inline int g_rank = -1;

#define CHECK(cond, ...)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      ++forked::g_failures;                                                          \
      fprintf(stderr, "[rank %d] CHECK FAILED line %d: ", forked::g_rank, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                                  \
      fprintf(stderr, "\n");                                                         \
    }                                                                                \
  } while (0)

struct IdPipe {
  int fds[2];
};

// `copies` copies of an id (cohort_unique_id_t or ncclUniqueId: 128 bytes), one per reader.
template <typename Id>
void send_id(const IdPipe &p, const Id &id, int copies) {
  for (int i = 0; i < copies; ++i) {
    if (write(p.fds[1], &id, sizeof(id)) != sizeof(id)) _exit(90);
  }
}

template <typename Id>
Id receive_id(const IdPipe &p) {
  Id id;
  size_t got = 0;
  while (got < sizeof(id)) {
    ssize_t n = read(p.fds[0], reinterpret_cast<char *>(&id) + got, sizeof(id) - got);
    if (n <= 0) _exit(91);
    got += static_cast<size_t>(n);
  }
  return id;
}

// Forks `processes` ranks, each running `rank_main(r)` for its exit status under an alarm of
// `alarm_s` (a stuck rank dies and the run fails), waits for all, and prints "<label>: ok",
// "FAILED" or "skipped".  0: every rank exited 0; 77: every rank skipped (exit 77); else 1.
inline int run_forked(const std::string &label, int processes, unsigned alarm_s,
                      const std::function<int(int)> &rank_main) {
  std::vector<pid_t> children;
  for (int r = 0; r < processes; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(alarm_s);
      _exit(rank_main(r));
    }
    children.push_back(pid);
  }
  int failed = 0, skipped = 0;
  for (size_t r = 0; r < children.size(); ++r) {
    int status = 0;
    waitpid(children[r], &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
      ++skipped;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %zu: %s %d\n", r, WIFEXITED(status) ? "exit status" : "killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++failed;
    }
  }
  if (skipped == processes) {
    printf("%s: skipped (no CUDA driver or device)\n", label.c_str());
    return 77;
  }
  const bool ok = failed == 0 && skipped == 0;
  printf("%s: %s\n", label.c_str(), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace forked
