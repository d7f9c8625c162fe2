// The collective kernels of src/kernels (allreduce.cu, ...) run on the CPU by emulated ranks
// (emul/team.h): the real launchers and kernels, compiled with g++ over the shim of emul/, each
// rank's blocks on OS threads of their own and a block's threads as fibers taking turns at
// barriers and spins (emul/cooperative.h).  It checks the kernels' logic where there is no GPU,
// e.g. in CI: slicing over blocks and ranks, the flags between ranks, in place, the pipeline
// steps, the call counter across calls, more ranks than reduce.h's kernels take inputs, abort
// and timeout.  Results are compared bit for bit with the host path's (reduce_reference.h);
// guard bytes around every buffer must stay untouched.
//
// Another collective over a DeviceTeam joins with an emul/<name>_emul.cc that compiles its .cu
// and registers the kernels its launcher passes by address (as emul/allreduce_emul.cc), and a
// suite of cases that call the launcher from EmulTeam::run (as allreduce_cases.cc).
//
// usage: team_emul_test [--full] [--suite shim|allreduce|collectives|faults]
//   --full   more counts, dtypes and rank counts (minutes); the default is make check's set
//   --suite  that suite alone
// Exits 0 when everything matched, 1 on a mismatch.
#include <chrono>
#include <cstdio>
#include <string>

#include "team_test.h"

namespace {

using cohort::team_test::Options;
using cohort::team_test::Tally;

struct Suite {
  const char *name;
  void (*run)(const Options &, Tally *);
};
const Suite kSuites[] = {{"shim", cohort::team_test::run_shim_cases},
                         {"allreduce", cohort::team_test::run_allreduce_cases},
                         {"collectives", cohort::team_test::run_collective_cases},
                         {"faults", cohort::team_test::run_fault_cases}};

void timed(const Suite &suite, const Options &options, Tally *tally) {
  const auto start = std::chrono::steady_clock::now();
  const long cases = tally->cases(), failures = tally->failures();
  suite.run(options, tally);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-10s %5ld cases, %ld failed (%.1f s)\n", suite.name, tally->cases() - cases,
              tally->failures() - failures, seconds);
}

}  // namespace

int main(int argc, char **argv) {
  Options options;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--full") {
      options.full = true;
    } else if (arg == "--suite" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: team_emul_test [--full] [--suite shim|allreduce|collectives|faults]\n");
      return 2;
    }
  }
  bool known = only.empty();
  for (const Suite &suite : kSuites) known = known || only == suite.name;
  if (!known) {
    std::fprintf(stderr, "team_emul_test: no suite '%s'\n", only.c_str());
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Tally tally;
  for (const Suite &suite : kSuites) {
    if (only.empty() || only == suite.name) timed(suite, options, &tally);
  }
  std::printf("team_emul_test: %ld cases, %ld failed", tally.cases(), tally.failures());
  if (tally.notes() > 0) std::printf(", %ld notes (known deviations)", tally.notes());
  std::printf("\n");
  return tally.failures() == 0 ? 0 : 1;
}
