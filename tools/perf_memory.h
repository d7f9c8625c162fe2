// Where cohort_perf's sweep keeps its two buffers and how one call runs on them: host memory
// (blocking calls, perf_memory.cc) or GPU device memory (stream-ordered calls on a stream of
// its own, perf_cuda.h).  The sweep writes inputs and reads results through host memory with
// upload() and download(), so the same --check runs on both.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cohort.h"
#include "perf_coll.h"

namespace cohort::perf {

enum class MemoryKind { kHost, kCuda };

const char *memory_name(MemoryKind kind);  // "host", "cuda"

// Every function that can fail returns "" or why (a CUDA call and its error).
class SweepMemory {
 public:
  virtual ~SweepMemory() = default;
  // The input and the output buffer, `bytes` each.
  virtual std::string allocate(size_t bytes) = 0;
  // Device memory: registers both buffers with `team` (cohort_mem_register, collective), to
  // be deregistered when the memory goes (before the team); "" or why not.  Host: nothing.
  virtual std::string register_buffers(cohort_team_t team) {
    (void)team;
    return "";
  }
  virtual Buffers buffers() const = 0;
  // Copies `bytes` from host memory into one of the buffers, or from one of them to the host.
  virtual std::string upload(void *dst, const void *host, size_t bytes) = 0;
  virtual std::string download(void *host, const void *src, size_t bytes) = 0;
  // Copies between the buffers (stages an in-place call), ordered before later calls.
  virtual std::string copy(const StageCopy &copy) = 0;
  // One Cohort call: blocking on host memory, enqueued on the stream on the device.
  virtual cohort_status_t run(cohort_team_t team, const Call &call) = 0;
  // Waits for everything run() and copy() started.
  virtual std::string synchronize() = 0;
  // The cudaStream_t the calls run on; nullptr on host memory.
  virtual void *stream() const = 0;
};

// Page-aligned buffers, touched before use so that no run pays for first-touch page faults.
std::unique_ptr<SweepMemory> make_host_memory();

}  // namespace cohort::perf
