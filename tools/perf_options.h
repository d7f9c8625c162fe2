// cohort_perf's command line: the options of both modes, checked together, with each mode's
// defaults filled in.
#pragma once

#include <cstdio>
#include <string>

#include "perf_sweep.h"
#include "perf_team.h"

namespace cohort::perf {

struct Options {
  bool team_create = true;  // the mode: team creation, or the collective sweep (-c)
  TeamCreateOptions team;
  SweepOptions sweep;
};

// --help.
void usage(FILE *out);

// Parses and checks argv: false with *error (one line, naming the option) when it is wrong.
// Exits 0 after printing usage() for --help.
bool parse_options(int argc, char **argv, Options *opt, std::string *error);

}  // namespace cohort::perf
