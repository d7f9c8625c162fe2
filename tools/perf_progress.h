// cohort_perf's progress line on stderr: on rank 0 and only when stderr is a terminal (a log
// or a pipe never gets it), one line rewritten in place and erased before anything else is
// written, so that it never mixes with the table on stdout (also on a shared terminal) or
// with an error message.  One line per process, as there is one stderr.
#pragma once

#include <string>

namespace cohort::perf {

// Starts the clock; the line is shown only if `enabled` (rank 0) and stderr is a terminal.
void progress_start(bool enabled);

// Replaces the line with "cohort_perf: TEXT, S s so far", once a second has passed since
// progress_start (shorter runs show nothing).
void progress_show(const std::string &text);

// Erases the line, if shown: call before writing to stdout or stderr.
void progress_clear();

}  // namespace cohort::perf
