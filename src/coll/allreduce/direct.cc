// Direct allreduce: every rank sends its whole input to every other, then reduces all inputs
// itself.  n-1 messages of the full size per rank, all in one step (the executor moves a
// step's transfers concurrently, so bounded channels cannot deadlock): one round of latency,
// the choice for small messages.  The inputs wait in scratch (one slot per rank) and are
// combined in rank order on every rank, so floating-point results are bit-identical
// everywhere.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AllreduceDirect : public Algorithm {
 public:
  using Algorithm::Algorithm;

  int num_steps() const override { return 1; }

  size_t scratch_count() const override { return args_.size > 1 ? args_.size * args_.count : 0; }

  void step(int, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, r = args_.rank;
    const Span input = span(Buffer::kSrc, 0, args_.count);
    const Span dst = span(Buffer::kDst, 0, args_.count);
    if (n == 1) {
      if (!args_.in_place) copy(out, dst, input);
      if (args_.op == COHORT_AVG) finalize(out, dst);
      return;
    }
    for (int k = 1; k < n; ++k) {  // rank r + k first: every rank starts with a different peer
      send(out, (r + k) % n, input);
      recv(out, (r - k + n) % n, block(Buffer::kScratch, (r - k + n) % n));
    }
    // Local actions run after the transfers, in order: in place, the output is the input.
    copy(out, block(Buffer::kScratch, r), input);
    copy(out, dst, block(Buffer::kScratch, 0));
    for (int j = 1; j < n; ++j) reduce(out, dst, block(Buffer::kScratch, j));
    if (args_.op == COHORT_AVG) finalize(out, dst);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_allreduce_direct(const CollArgs &args) {
  return std::make_unique<AllreduceDirect>(args);
}

}  // namespace cohort::coll
