// The component as Open MPI opened it: its MCA parameters and where its messages go (the
// glue's opal_output stream; unit tests pass their own output function).
#pragma once

#include "coll_cohort.h"

namespace cohort::ompi {

// Message levels: a warning is always shown, the others from that coll_cohort_verbose up.
constexpr int kWarning = 0;
constexpr int kSummary = 1;        // a communicator's counts at its end, its team's creation
constexpr int kFirstFallback = 2;  // the first fallback of each kind
constexpr int kEveryCall = 3;

// Keeps the parameters (a coll_cohort_init_timeout that is not positive is warned about and
// replaced by the default) and the output function (nullptr: stderr).
void configure(const coll_cohort_params_t &params, coll_cohort_output_fn_t output);
// The parameters in force: COLL_COHORT_PARAMS_DEFAULT until configure().
const coll_cohort_params_t &params();

// Whether a message of this level is shown: callers skip the work of composing one that is not.
bool shown(int level);
// "coll:cohort: " + the formatted text, to the output function when shown(level).
void say(int level, const char *format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace cohort::ompi
