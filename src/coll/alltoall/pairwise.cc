// Pairwise alltoall: in step s every rank sends to rank + s and receives from rank - s, so
// each step is a permutation and no rank is a hot spot.  In place, the input is first copied
// to scratch (a block may be overwritten before it is sent); alltoallv copies the span its
// blocks cover.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AlltoallPairwise : public Algorithm {
 public:
  using Algorithm::Algorithm;

  int num_steps() const override { return args_.size; }

  size_t scratch_count() const override { return args_.in_place ? input_extent() : 0; }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, r = args_.rank;
    if (s == 0) {
      if (args_.in_place) {
        copy(out, span(Buffer::kScratch, 0, input_extent()), span(Buffer::kSrc, 0, input_extent()));
      } else {
        copy(out, block(Buffer::kDst, r), block(Buffer::kSrc, r));
      }
      return;
    }
    send(out, (r + s) % n, block(input(), (r + s) % n));
    recv(out, (r - s + n) % n, block(Buffer::kDst, (r - s + n) % n));
  }

 private:
  Buffer input() const { return args_.in_place ? Buffer::kScratch : Buffer::kSrc; }
  // Elements from the input's start to the end of its last block.
  size_t input_extent() const {
    size_t end = 0;
    for (int q = 0; q < args_.size; ++q) {
      const Span b = block(Buffer::kSrc, q);
      end = std::max(end, b.offset + b.count);
    }
    return end;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_alltoall_pairwise(const CollArgs &args) {
  return std::make_unique<AlltoallPairwise>(args);
}

}  // namespace cohort::coll
