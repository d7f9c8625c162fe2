// The options coll_random and p2p_random share: [--iters N] [--seed S] [--max-count C]
// [--per-node K] [--memory device] [--stream N] [--graph N].  An unknown option exits 2, naming it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpi_test {

struct RandomOptions {
  long iters = 0;
  unsigned long long seed = 1;
  size_t max_count = 70000;
  int per_node = 0;     // --per-node K: fake hosts of K ranks
  bool device = false;  // --memory device
  int streams = 0;      // --stream N: stream-ordered calls on N streams
  int graph = 0;        // --graph N: each stream call captured into a CUDA graph, replayed N times
};

inline RandomOptions parse_random_options(int argc, char **argv, const char *program,
                                          long default_iters) {
  RandomOptions o;
  o.iters = default_iters;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--iters")
      o.iters = std::atol(argv[i + 1]);
    else if (key == "--seed")
      o.seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (key == "--max-count")
      o.max_count = std::strtoull(argv[i + 1], nullptr, 10);
    else if (key == "--per-node")
      o.per_node = std::atoi(argv[i + 1]);
    else if (key == "--memory" && std::string(argv[i + 1]) == "device")
      o.device = true;
    else if (key == "--stream")
      o.streams = std::atoi(argv[i + 1]);
    else if (key == "--graph")
      o.graph = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", program, key.c_str());
      std::exit(2);
    }
  }
  return o;
}

// With --per-node K, puts this rank on fake host `prefix`-(rank / K) (COHORT_HOST_ID).
inline void place_on_fake_host(const RandomOptions &o, int rank, const char *prefix) {
  if (o.per_node <= 0) return;
  setenv("COHORT_HOST_ID", (prefix + std::to_string(rank / o.per_node)).c_str(), 1);
}

}  // namespace mpi_test
