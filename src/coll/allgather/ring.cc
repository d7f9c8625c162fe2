// Ring allgather: each step passes on the block received in the step before; n-1 steps.  The
// rank's own block goes out from the input (or, in place, from its block of the output).
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AllgatherRing : public RingAlgorithm {
 public:
  using RingAlgorithm::RingAlgorithm;

  int num_steps() const override { return ring_.n == 1 ? 1 : ring_.n - 1; }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = ring_.n, i = ring_.position;
    const Span own_in =
        args_.in_place ? block(Buffer::kDst, args_.rank) : span(Buffer::kSrc, 0, args_.count);
    if (n > 1) {
      send(out, ring_.next(), s == 0 ? own_in : block(Buffer::kDst, ring_.at(i - s)));
      recv(out, ring_.prev(), block(Buffer::kDst, ring_.at(i - s - 1)));
    }
    if (s == 0 && !args_.in_place) copy(out, block(Buffer::kDst, args_.rank), own_in);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_allgather_ring(const CollArgs &args) {
  return std::make_unique<AllgatherRing>(args);
}

}  // namespace cohort::coll
