// Pipelined chain exclusive scan in rank order: rank r receives the prefix of
// ranks 0..r-1 (its result) piece by piece and passes that prefix reduced with
// its own input to r + 1. The outgoing prefix waits in scratch; in place the
// arrival does too, because the output still holds the input it must be reduced
// with.  Rank 0's output is not written.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class ExscanChain : public ChainAlgorithm {
 public:
  using ChainAlgorithm::ChainAlgorithm;

  size_t scratch_count() const override {
    return forwards() ? (args_.in_place ? 2 : 1) * piece_size() : 0;
  }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    if (nothing_moves()) return;
    const int r = args_.rank;
    const int outgoing = s - r;  // piece j leaves rank r in step j + r
    if (outgoing >= 0 && outgoing < pieces_) {
      if (r == 0) send(out, 1, piece(Buffer::kSrc, outgoing));
      if (forwards()) send(out, r + 1, onward(outgoing));
    }
    const int incoming = outgoing + 1;
    if (r == 0 || incoming < 0 || incoming >= pieces_) return;
    const Span result = piece(Buffer::kDst, incoming);
    if (!forwards()) {  // the last rank: its input is needed no more
      recv(out, r - 1, result);
      return;
    }
    const Span arrival = args_.in_place ? arrival_slot(incoming) : result;
    recv(out, r - 1, arrival);
    // Local actions run after this step's send of the previous piece from
    // `onward`.
    copy(out, onward(incoming), arrival);
    reduce(out, onward(incoming), piece(Buffer::kSrc, incoming));
    if (args_.in_place) copy(out, result, arrival);
  }

 private:
  bool forwards() const { return args_.rank > 0 && args_.rank < args_.size - 1; }
  size_t piece_size() const { return pieces_ == 0 ? 0 : (args_.count + pieces_ - 1) / pieces_; }
  // The prefix through this rank, for the next one.
  Span onward(int j) const { return span(Buffer::kScratch, 0, piece(Buffer::kSrc, j).count); }
  // In place: the prefix before this rank, until the input was reduced into
  // `onward`.
  Span arrival_slot(int j) const {
    return span(Buffer::kScratch, piece_size(), piece(Buffer::kSrc, j).count);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_exscan_chain(const CollArgs &args) {
  return std::make_unique<ExscanChain>(args);
}

}  // namespace cohort::coll
