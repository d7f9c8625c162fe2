// Pipelined chain reduce along the ring towards the root: the rank after the root starts,
// each rank adds its input to the partial it receives and passes it on, piece by piece; the
// root reduces the last partial into its output.  Partials wait in a two-piece scratch.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class ReduceChain : public ChainAlgorithm {
 public:
  explicit ReduceChain(const CollArgs &args)
      : ChainAlgorithm(args),
        // Ranks still to come before the root: n - 1 for the one after it, 0 for the root.
        to_root_((ring_.n - ring_.distance_from(args.root)) % ring_.n) {}

  size_t scratch_count() const override { return ring_.n > 2 ? 2 * piece_size() : 0; }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = ring_.n, e = to_root_;
    const bool root = e == 0;
    if (nothing_moves()) {
      if (root && !args_.in_place) copy(out, whole(Buffer::kDst), whole(Buffer::kSrc));
      if (root && args_.op == COHORT_AVG) finalize(out, whole(Buffer::kDst));
      return;
    }
    const bool first = e == n - 1;  // starts the chain: sends its own input
    int outgoing = s - (n - 1 - e);
    if (!root && outgoing >= 0 && outgoing < pieces_) {
      send(out, ring_.next(), first ? piece(Buffer::kSrc, outgoing) : partial(outgoing));
    }
    int incoming = s - (n - 2 - e);
    if (!first && incoming >= 0 && incoming < pieces_) {
      Span into = root ? piece(Buffer::kDst, incoming) : partial(incoming);
      recv_reduce(out, ring_.prev(), into, piece(Buffer::kSrc, incoming));
      if (root && args_.op == COHORT_AVG) finalize(out, into);
    }
  }

 private:
  size_t piece_size() const { return pieces_ == 0 ? 0 : (args_.count + pieces_ - 1) / pieces_; }
  Span whole(Buffer buffer) const { return span(buffer, 0, args_.count); }
  Span partial(int j) const {
    return span(Buffer::kScratch, (j % 2) * piece_size(), piece(Buffer::kSrc, j).count);
  }

  int to_root_;
};

}  // namespace

std::unique_ptr<Algorithm> make_reduce_chain(const CollArgs &args) {
  return std::make_unique<ReduceChain>(args);
}

}  // namespace cohort::coll
