// Pipelined chain scan in rank order (a prefix follows the ranks, not the
// plan's ring): rank r receives the prefix of ranks 0..r-1 piece by piece,
// reduces its input into it in its output, and passes the result to r + 1.  A
// large message costs about one transfer of it plus n - 2 pieces of latency;
// small ones n - 1 hops.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class ScanChain : public ChainAlgorithm {
 public:
  using ChainAlgorithm::ChainAlgorithm;

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = args_.size, r = args_.rank;
    if (r == 0 && s == 0 && !args_.in_place) {
      copy(out, span(Buffer::kDst, 0, args_.count), span(Buffer::kSrc, 0, args_.count));
    }
    if (nothing_moves()) return;
    const int outgoing = s - r;  // piece j leaves rank r in step j + r
    if (r < n - 1 && outgoing >= 0 && outgoing < pieces_) {
      // Rank 0's prefix is its input (its output may not be copied yet).
      send(out, r + 1, piece(r == 0 ? Buffer::kSrc : Buffer::kDst, outgoing));
    }
    const int incoming = outgoing + 1;
    if (r > 0 && incoming >= 0 && incoming < pieces_) {
      recv_reduce(out, r - 1, piece(Buffer::kDst, incoming), piece(Buffer::kSrc, incoming));
    }
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_scan_chain(const CollArgs &args) {
  return std::make_unique<ScanChain>(args);
}

}  // namespace cohort::coll
