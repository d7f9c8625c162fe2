// Direct allreduce: every rank sends its whole input to every other, then reduces all inputs
// itself.  n-1 messages of the full size per rank, one hop of latency: the choice for small
// messages.  Step k pairs rank r's send to r + k with its receive from r - k, so every step
// is a permutation and bounded channels never deadlock.  The inputs wait in scratch (one
// slot per rank) and are combined in rank order on every rank, so floating-point results are
// bit-identical everywhere.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AllreduceDirect : public Algorithm {
 public:
  using Algorithm::Algorithm;

  // Steps 1..n-1 exchange; the last of them (or step 0 alone) also reduces.
  int num_steps() const override { return args_.size; }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, r = args_.rank;
    const Span input = span(Buffer::kSrc, 0, args_.count);
    const Span dst = span(Buffer::kDst, 0, args_.count);
    if (n == 1) {
      if (!args_.in_place) copy(out, dst, input);
      if (args_.op == COHORT_AVG) finalize(out, dst);
      return;
    }
    if (s == 0) {
      copy(out, slot(r), input);  // in place, the output is about to be overwritten
      return;
    }
    send(out, (r + s) % n, input);
    recv(out, (r - s + n) % n, slot((r - s + n) % n));
    if (s < n - 1) return;
    copy(out, dst, slot(0));
    for (int j = 1; j < n; ++j) reduce(out, dst, slot(j));
    if (args_.op == COHORT_AVG) finalize(out, dst);
  }

  size_t scratch_count() const override { return args_.size > 1 ? args_.size * args_.count : 0; }

 private:
  Span slot(int rank) const {
    return span(Buffer::kScratch, static_cast<size_t>(rank) * args_.count, args_.count);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_allreduce_direct(const CollArgs &args) {
  return std::make_unique<AllreduceDirect>(args);
}

}  // namespace cohort::coll
