#include "test_support.h"

namespace mpi_test {

int run_main(int argc, char **argv, const Scenarios &scenarios,
             const std::function<std::string(const std::string &)> &skip) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCENARIO [--name value ...]\n", argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strncmp(argv[i], "--", 2) == 0) g_opts[argv[i] + 2] = argv[i + 1];
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  auto it = scenarios.find(scenario);
  if (it == scenarios.end()) {
    if (g_rank == 0) fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    MPI_Finalize();
    return 2;
  }
  std::string reason = skip ? skip(scenario) : "";
  int skipping = !reason.empty();
  MPI_Allreduce(MPI_IN_PLACE, &skipping, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (skipping) {
    if (!reason.empty()) printf("SKIP: %s\n", reason.c_str());
    MPI_Finalize();
    return 77;
  }
  try {
    it->second();
  } catch (const cohort::Error &e) {
    CHECK(false, "exception: %s (%s)", e.what(), cohort_last_error());
  }
  int failures = g_failures;
  if (g_finalized) {  // no MPI left to agree with: each rank reports for itself
    if (failures > 0) fprintf(stderr, "rank %d: %d failed checks\n", g_rank, failures);
    if (g_rank == 0) printf("%s on rank 0: %s\n", scenario.c_str(), failures ? "FAIL" : "PASS");
    return failures == 0 ? 0 : 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    printf("%s on %d ranks: %s (%d failed checks)\n", scenario.c_str(), g_size,
           failures == 0 ? "PASS" : "FAIL", failures);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

}  // namespace mpi_test
