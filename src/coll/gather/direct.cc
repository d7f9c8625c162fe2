// Direct gather: every other rank sends its block straight to the root, which receives all of
// them in one step.  The root takes in (n-1) blocks whatever the shape, so a tree would only
// add hops; on a host the n-1 receives proceed side by side.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class GatherDirect : public Algorithm {
 public:
  using Algorithm::Algorithm;

  int num_steps() const override { return 1; }

  void step(int, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, root = args_.root;
    const Span input = span(Buffer::kSrc, 0, args_.count);
    if (args_.rank != root) {
      send(out, root, input);
      return;
    }
    for (int q = 0; q < n; ++q) {
      if (q != root) recv(out, q, block(Buffer::kDst, q));
    }
    // In place the root's block already sits at its slot of the output.
    if (!args_.in_place) copy(out, block(Buffer::kDst, root), input);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_gather_direct(const CollArgs &args) {
  return std::make_unique<GatherDirect>(args);
}

}  // namespace cohort::coll
