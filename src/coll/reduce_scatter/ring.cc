// Ring reduce-scatter: as the first half of the ring allreduce, on blocks of `count` elements
// each.  Partial sums travel through a two-block scratch buffer (the input is the caller's and
// stays untouched); the last step reduces into the output.  Block of position k: the block of
// the rank at ring position k - 1, so each rank ends with its own.  reduce_scatterv's blocks
// differ in size: each scratch slot holds the largest.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class ReduceScatterRing : public RingAlgorithm {
 public:
  using RingAlgorithm::RingAlgorithm;

  int num_steps() const override { return ring_.n == 1 ? 1 : ring_.n - 1; }

  size_t scratch_count() const override { return ring_.n > 2 ? 2 * slot_count() : 0; }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = ring_.n, i = ring_.position;
    const Span mine = span(Buffer::kDst, 0, args_.count);
    if (n == 1) {
      if (!args_.in_place) copy(out, mine, input_block(i + 1));
      if (args_.op == COHORT_AVG) finalize(out, mine);
      return;
    }
    // Step s sends the partial of position i - s and receives that of position i - s - 1.
    Span outgoing = s == 0 ? input_block(i) : scratch_slot(s - 1, input_block(i - s).count);
    Span incoming = s == n - 2 ? mine : scratch_slot(s, input_block(i - s - 1).count);
    send(out, ring_.next(), outgoing);
    recv_reduce(out, ring_.prev(), incoming, input_block(i - s - 1));
    if (s == n - 2 && args_.op == COHORT_AVG) finalize(out, mine);
  }

 private:
  // The input block that chunk k of the ring stands for.
  Span input_block(int k) const { return block(Buffer::kSrc, ring_.at(k - 1)); }
  size_t slot_count() const {
    if (!args_.layouts) return args_.count;
    const std::vector<size_t> &counts = args_.layouts->send.counts;
    return *std::max_element(counts.begin(), counts.end());
  }
  // Scratch slot s % 2, holding `count` elements.
  Span scratch_slot(int s, size_t count) const {
    return span(Buffer::kScratch, (s % 2) * slot_count(), count);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_reduce_scatter_ring(const CollArgs &args) {
  return std::make_unique<ReduceScatterRing>(args);
}

}  // namespace cohort::coll
