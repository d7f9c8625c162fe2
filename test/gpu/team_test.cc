#include "team_test.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "reduce_reference.h"

namespace cohort::team_test {

namespace {
constexpr long kFailuresShown = 40;
constexpr long kNotesShown = 4;
constexpr int kDifferencesShown = 4;
}  // namespace

void Tally::fail(const std::string &what) {
  ++failures_;
  if (failures_ <= kFailuresShown) std::printf("FAIL %s\n", what.c_str());
  if (failures_ == kFailuresShown) std::printf("(further failures are counted, not shown)\n");
}

void Tally::note(const std::string &what) {
  ++notes_;
  if (notes_ <= kNotesShown) std::printf("NOTE %s\n", what.c_str());
}

void GuardedBuffer::Free::operator()(unsigned char *p) const { std::free(p); }

GuardedBuffer::GuardedBuffer(size_t bytes, size_t offset) : bytes_(bytes) {
  const size_t total = (kGuardBytes + offset + bytes + kGuardBytes + 255) / 256 * 256 + 256;
  storage_.reset(static_cast<unsigned char *>(std::aligned_alloc(256, total)));
  if (!storage_) {
    std::fprintf(stderr, "team_emul_test: no memory for %zu bytes\n", total);
    std::exit(1);
  }
  // The guard before the data starts at a 256-byte boundary, so the data does at `offset`.
  data_ = storage_.get() + 256 + offset;
  poison();
}

void GuardedBuffer::poison() {
  std::memset(data_ - kGuardBytes, kPoison, kGuardBytes + bytes_ + kGuardBytes);
}

std::string GuardedBuffer::check_guards() const {
  for (size_t b = 0; b < kGuardBytes; ++b) {
    const unsigned char before = data_[-1 - static_cast<long>(b)];
    const unsigned char after = data_[bytes_ + b];
    if (before == kPoison && after == kPoison) continue;
    char text[96];
    std::snprintf(text, sizeof text, "guard byte %s%zu changed to 0x%02x",
                  before != kPoison ? "-" : "+", before != kPoison ? b + 1 : b,
                  before != kPoison ? before : after);
    return text;
  }
  return "";
}

std::string compare_elements(kernels::DType dtype, const unsigned char *got,
                             const unsigned char *want, size_t count) {
  const size_t size = kernels::dtype_size(dtype);
  std::string what;
  size_t differ = 0;
  for (size_t i = 0; i < count; ++i) {
    const unsigned char *g = got + i * size;
    const unsigned char *w = want + i * size;
    if (std::memcmp(g, w, size) == 0) continue;
    if (kernel_test::is_nan(dtype, g) && kernel_test::is_nan(dtype, w)) continue;
    if (differ++ < kDifferencesShown) {
      uint64_t gv = 0, wv = 0;
      std::memcpy(&gv, g, size);
      std::memcpy(&wv, w, size);
      char text[96];
      std::snprintf(text, sizeof text, "%s[%zu] got 0x%" PRIx64 " want 0x%" PRIx64,
                    what.empty() ? "" : "; ", i, gv, wv);
      what += text;
    }
  }
  if (differ > kDifferencesShown) what += "; ... " + std::to_string(differ) + " elements differ";
  return what;
}

}  // namespace cohort::team_test
