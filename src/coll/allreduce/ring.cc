// Ring allreduce: a reduce-scatter around the ring, then an allgather.  Chunk k of the
// buffer travels from position k; after n-1 steps position i holds chunk i+1 reduced, and n-1
// more steps carry each reduced chunk around.  Bandwidth-optimal: 2(n-1)/n of the data per
// rank.  Receives reduce straight into the output, with the rank's own input as operand, so
// neither a scratch buffer nor a first copy is needed, in place or not.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AllreduceRing : public RingAlgorithm {
 public:
  using RingAlgorithm::RingAlgorithm;

  int num_steps() const override { return ring_.n == 1 ? 1 : 2 * (ring_.n - 1); }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const int n = ring_.n;
    if (n == 1) {
      if (!args_.in_place) copy(out, chunk(Buffer::kDst, 0, 1), chunk(Buffer::kSrc, 0, 1));
      if (args_.op == COHORT_AVG) finalize(out, chunk(Buffer::kDst, 0, 1));
      return;
    }
    const int i = ring_.position;
    if (s < n - 1) {  // reduce-scatter
      int sent = i - s, received = i - s - 1;
      send(out, ring_.next(), chunk(s == 0 ? Buffer::kSrc : Buffer::kDst, sent, n));
      recv_reduce(out, ring_.prev(), chunk(Buffer::kDst, received, n),
                  chunk(Buffer::kSrc, received, n));
      if (s == n - 2 && args_.op == COHORT_AVG) finalize(out, chunk(Buffer::kDst, received, n));
      return;
    }
    int t = s - (n - 1);  // allgather
    send(out, ring_.next(), chunk(Buffer::kDst, i + 1 - t, n));
    recv(out, ring_.prev(), chunk(Buffer::kDst, i - t, n));
  }

 private:
  Span chunk(Buffer buffer, int k, int n) const {
    k = ((k % n) + n) % n;
    size_t begin = part_begin(args_.count, n, k);
    return span(buffer, begin, part_begin(args_.count, n, k + 1) - begin);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_allreduce_ring(const CollArgs &args) {
  return std::make_unique<AllreduceRing>(args);
}

}  // namespace cohort::coll
