// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k;
// after ceil(log2 n) rounds every rank has heard, directly or not, from every other.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class BarrierDissemination : public Algorithm {
 public:
  using Algorithm::Algorithm;

  int num_steps() const override {
    int rounds = 0;
    while ((1 << rounds) < args_.size) ++rounds;
    return std::max(rounds, 1);
  }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, r = args_.rank;
    if (n == 1) return;
    const int distance = 1 << s;
    send(out, (r + distance) % n, span(Buffer::kSrc, 0, 0));
    recv(out, ((r - distance) % n + n) % n, span(Buffer::kDst, 0, 0));
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_barrier_dissemination(const CollArgs &args) {
  return std::make_unique<BarrierDissemination>(args);
}

}  // namespace cohort::coll
