// The file cohort_perf --calibrate writes (coll/select.h has its grammar), in blocks: what one
// run measured for one collective, memory, team size and host count ("allreduce@host ranks=2
// hosts=1"), its rules and, as comments, every candidate's times.  A file that exists is
// merged: its blocks of other keys stay, so runs at several team sizes make one table.
#pragma once

#include <string>
#include <vector>

namespace cohort::perf {

struct TuningBlock {
  std::string key;                    // "allreduce@host ranks=2 hosts=1"
  std::vector<std::string> comments;  // "# [KEY] 8: ring 2.30, direct 1.47"
  std::vector<std::string> rules;     // "rule allreduce@host:0-8K=direct ranks=2 hosts=1 us=..."
};

// The machine line: "NVIDIA H100 80GB HBM3, 16 cores, host node7, Cohort 0.1.0 (git ...)", or
// "no GPU, ..." for host memory; `gpu_name` "" for none.
std::string machine_text(const std::string &gpu_name);

// "" when --calibrate may write to `path` (no file there, or a tuning file measured with the
// same cores and, where both ran on one, the same GPU as `machine`), else why not: checked
// before measuring.
std::string tuning_file_usable(const std::string &path, const std::string &machine);

// Writes `blocks` to `path` after the blocks of the file already there whose keys differ, and
// reads the result back through the library's parser.  "" or why not (nothing is written when
// the file there is no tuning file or was measured on another kind of machine).  *rules gets
// the rule count of the file written.
std::string write_tuning_file(const std::string &path, const std::string &machine,
                              const std::vector<TuningBlock> &blocks, size_t *rules);

}  // namespace cohort::perf
