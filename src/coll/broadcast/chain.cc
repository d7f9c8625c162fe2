// Pipelined chain broadcast along the ring from the root: the data is cut into pieces and
// each rank forwards piece j to the next while it receives piece j + 1, so a large message
// costs about one transfer of it plus n - 2 pieces of latency.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class BroadcastChain : public ChainAlgorithm {
 public:
  explicit BroadcastChain(const CollArgs &args)
      : ChainAlgorithm(args), distance_(ring_.distance_from(args.root)) {}

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = ring_.n;
    const int d = distance_;
    const bool root = d == 0;
    if (root && s == 0 && !args_.in_place) {
      copy(out, span(Buffer::kDst, 0, args_.count), span(Buffer::kSrc, 0, args_.count));
    }
    if (nothing_moves()) return;
    int forward = s - d;  // the piece this rank passes on now
    if (d <= n - 2 && forward >= 0 && forward < pieces_) {
      send(out, ring_.next(), piece(root ? Buffer::kSrc : Buffer::kDst, forward));
    }
    int arriving = s - d + 1;
    if (!root && arriving >= 0 && arriving < pieces_)
      recv(out, ring_.prev(), piece(Buffer::kDst, arriving));
  }

 private:
  int distance_;  // positions after the root along the ring
};

}  // namespace

std::unique_ptr<Algorithm> make_broadcast_chain(const CollArgs &args) {
  return std::make_unique<BroadcastChain>(args);
}

}  // namespace cohort::coll
