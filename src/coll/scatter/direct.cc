// Direct scatter: the root sends block q of its input straight to rank q, all in one step.
// The root sends out (n-1) blocks whatever the shape, so a tree would only add hops.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class ScatterDirect : public Algorithm {
 public:
  using Algorithm::Algorithm;

  int num_steps() const override { return 1; }

  void step(int, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, root = args_.root;
    const Span output = span(Buffer::kDst, 0, args_.count);
    if (args_.rank != root) {
      recv(out, root, output);
      return;
    }
    for (int q = 0; q < n; ++q) {
      if (q != root) send(out, q, block(Buffer::kSrc, q));
    }
    // In place the root's output is its own block of the input.
    if (!args_.in_place) copy(out, output, block(Buffer::kSrc, root));
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_scatter_direct(const CollArgs &args) {
  return std::make_unique<ScatterDirect>(args);
}

}  // namespace cohort::coll
