#include "team/lines_gate.h"

#include <atomic>

#include "team/staging.h"

namespace cohort {

using kernels::ll_data;
using kernels::ll_flag;
using kernels::ll_half;
using kernels::ll_lines;
using kernels::LlLine;

namespace {

uint64_t load_half(const LlLine *line, int i) {
  return std::atomic_ref<uint64_t>(const_cast<LlLine *>(line)->half[i])
      .load(std::memory_order_acquire);
}
void store_half(LlLine *line, int i, uint64_t value) {
  std::atomic_ref<uint64_t>(line->half[i]).store(value, std::memory_order_release);
}

class LinesGate final : public RequestGate {
 public:
  explicit LinesGate(const LinesPiece &p) : p_(p) {}

  // Called by whichever thread polls the team's queue, one at a time: it takes the lines that
  // landed since its last look, so each is read once it carries the flag.
  bool open() const override {
    const size_t lines = ll_lines(p_.in_bytes);
    while (taken_ < lines &&
           take_line(p_.in_lines + taken_, p_.piece, taken_, p_.in_slot, p_.in_bytes)) {
      ++taken_;
    }
    if (taken_ < lines) return false;
    if (!cleared_) {  // taken: no later piece of the same number mistakes them for its own
      for (size_t i = 0; i < lines; ++i) {
        store_half(p_.in_lines + i, 0, 0);
        store_half(p_.in_lines + i, 1, 0);
      }
      cleared_ = true;
    }
    return true;
  }

  void end(Status) override {
    const size_t lines = ll_lines(p_.out_bytes);
    for (size_t i = 0; i < lines; ++i)
      put_line(p_.out_lines + i, p_.out_slot, p_.out_bytes, i, p_.piece);
    advance_done(p_.done, p_.piece);
  }

 private:
  LinesPiece p_;
  mutable size_t taken_ = 0;
  mutable bool cleared_ = false;
};

}  // namespace

void put_line(LlLine *line, const void *src, size_t bytes, size_t i, uint32_t flag) {
  uint32_t d0 = 0, d1 = 0;
  kernels::ll_payload(src, bytes, i, &d0, &d1);
  store_half(line, 0, ll_half(d0, flag));
  store_half(line, 1, ll_half(d1, flag));
}

bool take_line(const LlLine *line, uint32_t flag, size_t i, void *dst, size_t bytes) {
  const uint64_t h0 = load_half(line, 0);
  const uint64_t h1 = load_half(line, 1);
  if (ll_flag(h0) != flag || ll_flag(h1) != flag) return false;
  kernels::ll_unpayload(ll_data(h0), ll_data(h1), i, dst, bytes);
  return true;
}

std::shared_ptr<RequestGate> lines_gate(const LinesPiece &piece) {
  return std::make_shared<LinesGate>(piece);
}

}  // namespace cohort
