// Pairwise alltoall: in step s every rank sends to rank + s and receives from rank - s, so
// each step is a permutation and no rank is a hot spot.  In place, the input is first copied
// to scratch (a block may be overwritten before it is sent); alltoallv copies the span its
// non-empty blocks cover, from the first one's start, at the same offsets: bytes outside the
// blocks are not the call's (the Open MPI component stages just that span of a GPU buffer).
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AlltoallPairwise : public Algorithm {
 public:
  using Algorithm::Algorithm;

  int num_steps() const override { return args_.size; }

  // Every block's offset lies in the scratch, an empty one's too (its send names it).
  size_t scratch_count() const override {
    if (!args_.in_place) return 0;
    size_t end = 0;
    for (int q = 0; q < args_.size; ++q) {
      const Span b = block(Buffer::kSrc, q);
      end = std::max(end, b.offset + b.count);
    }
    return end;
  }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, r = args_.rank;
    if (s == 0) {
      if (args_.in_place) {
        const Extent e = input_extent();
        copy(out, span(Buffer::kScratch, e.begin, e.end - e.begin),
             span(Buffer::kSrc, e.begin, e.end - e.begin));
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
  // Elements from the start of the input's first non-empty block to the end of its last
  // (a block of no elements may lie anywhere); {0, 0} when every block is empty.
  struct Extent {
    size_t begin = 0, end = 0;
  };
  Extent input_extent() const {
    Extent e;
    bool any = false;
    for (int q = 0; q < args_.size; ++q) {
      const Span b = block(Buffer::kSrc, q);
      if (b.count == 0) continue;
      e.begin = any ? std::min(e.begin, b.offset) : b.offset;
      e.end = std::max(e.end, b.offset + b.count);
      any = true;
    }
    return e;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_alltoall_pairwise(const CollArgs &args) {
  return std::make_unique<AlltoallPairwise>(args);
}

}  // namespace cohort::coll
