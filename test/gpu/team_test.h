// What the cases of team_emul_test share: options, the tally of failures, and host buffers
// standing for device ones, between guards that must stay untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/types.h"

namespace cohort::team_test {

struct Options {
  bool full = false;  // more counts, dtypes and rank counts (minutes on a CPU)
};

// Cases run and failed, and notes (known deviations, not failures); prints the first failures
// and notes as they come.
class Tally {
 public:
  void count_case() { ++cases_; }
  void fail(const std::string &what);
  void note(const std::string &what);
  long cases() const { return cases_; }
  long failures() const { return failures_; }
  long notes() const { return notes_; }

 private:
  long cases_ = 0;
  long failures_ = 0;
  long notes_ = 0;
};

// `bytes` of host memory at `offset` bytes past a 256-byte boundary (cudaMalloc's alignment),
// with kGuardBytes of kPoison on each side.
class GuardedBuffer {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr unsigned char kPoison = 0xa5;

  GuardedBuffer(size_t bytes, size_t offset);
  unsigned char *data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // Data and guards all kPoison.
  void poison();
  // What changed in the guards, "" when nothing did.
  std::string check_guards() const;

 private:
  struct Free {
    void operator()(unsigned char *p) const;
  };
  std::unique_ptr<unsigned char, Free> storage_;
  unsigned char *data_;
  size_t bytes_;
};

// Compares `count` elements of `got` with `want` bit for bit (two NaNs match); returns the
// first differences as "index got 0x.. want 0x..", "" when all match.
std::string compare_elements(kernels::DType dtype, const unsigned char *got,
                             const unsigned char *want, size_t count);

// The suites (emul_cases.cc, allreduce_cases.cc, coll_cases.cc, fault_cases.cc).
void run_shim_cases(const Options &options, Tally *tally);
void run_allreduce_cases(const Options &options, Tally *tally);
void run_collective_cases(const Options &options, Tally *tally);
void run_fault_cases(const Options &options, Tally *tally);

}  // namespace cohort::team_test
