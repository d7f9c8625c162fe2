#include "perf_memory.h"

#include <cstdlib>
#include <cstring>

namespace cohort::perf {
namespace {

struct FreeDeleter {
  void operator()(char *p) const { free(p); }
};
using HostBuffer = std::unique_ptr<char, FreeDeleter>;

HostBuffer allocate_touched(size_t bytes) {
  constexpr size_t kPage = 4096;
  const size_t rounded = (bytes + kPage - 1) / kPage * kPage + kPage;
  HostBuffer buffer(static_cast<char *>(aligned_alloc(kPage, rounded)));
  if (buffer) memset(buffer.get(), 0, rounded);
  return buffer;
}

class HostMemory final : public SweepMemory {
 public:
  std::string allocate(size_t bytes) override {
    input_ = allocate_touched(bytes);
    output_ = allocate_touched(bytes);
    if (input_ && output_) return "";
    return "cannot allocate 2 host buffers of " + std::to_string(bytes) + " bytes";
  }
  Buffers buffers() const override { return {input_.get(), output_.get()}; }
  std::string upload(void *dst, const void *host, size_t bytes) override {
    if (bytes > 0) memcpy(dst, host, bytes);
    return "";
  }
  std::string download(void *host, const void *src, size_t bytes) override {
    if (bytes > 0) memcpy(host, src, bytes);
    return "";
  }
  std::string copy(const StageCopy &copy) override {
    if (copy.bytes > 0) memcpy(copy.dst, copy.src, copy.bytes);
    return "";
  }
  cohort_status_t run(cohort_team_t team, const Call &call) override {
    return run_cohort(team, call);
  }
  std::string synchronize() override { return ""; }
  void *stream() const override { return nullptr; }

 private:
  HostBuffer input_, output_;
};

}  // namespace

const char *memory_name(MemoryKind kind) { return kind == MemoryKind::kCuda ? "cuda" : "host"; }

std::unique_ptr<SweepMemory> make_host_memory() { return std::make_unique<HostMemory>(); }

}  // namespace cohort::perf
