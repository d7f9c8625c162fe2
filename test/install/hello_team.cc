// A C++ program against the installed cohort.hpp.
#include <cohort.hpp>
#include <cstdio>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int ok = 1;
  try {
    cohort_team_config_t config = COHORT_TEAM_CONFIG_INITIALIZER;
    config.cuda_device = COHORT_DEVICE_NONE;
    cohort::Team team(MPI_COMM_WORLD, &config);
    cohort::Team none = team.split(COHORT_SPLIT_NOCOLOR, 0);
    ok = !none && team.local_size() >= 1;
  } catch (const cohort::Error &e) {
    fprintf(stderr, "%s\n", e.what());
    ok = 0;
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
