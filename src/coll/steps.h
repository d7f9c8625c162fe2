// Small helpers the algorithms share to write their actions.
#pragma once

#include <algorithm>
#include <cmath>

#include "coll/schedule.h"

namespace cohort::coll {

inline Span span(Buffer buffer, size_t offset, size_t count) { return Span{buffer, offset, count}; }

inline void send(std::vector<Action> *out, int peer, Span src) {
  out->push_back(Action{Verb::kSend, peer, Span{}, src});
}
inline void recv(std::vector<Action> *out, int peer, Span dst) {
  out->push_back(Action{Verb::kRecv, peer, dst, Span{}});
}
inline void recv_reduce(std::vector<Action> *out, int peer, Span dst, Span src) {
  out->push_back(Action{Verb::kRecvReduce, peer, dst, src});
}
inline void copy(std::vector<Action> *out, Span dst, Span src) {
  out->push_back(Action{Verb::kCopy, -1, dst, src});
}
inline void reduce(std::vector<Action> *out, Span dst, Span src) {
  out->push_back(Action{Verb::kReduce, -1, dst, src});
}
inline void finalize(std::vector<Action> *out, Span dst) {
  out->push_back(Action{Verb::kFinalize, -1, dst, Span{}});
}

// Position of `rank` in the ring, and the ring's neighbours.
struct RingView {
  const std::vector<int> &ring;
  int n;
  int position;
  explicit RingView(const CollArgs &args);
  int at(int k) const { return ring[((k % n) + n) % n]; }
  int next() const { return at(position + 1); }
  int prev() const { return at(position - 1); }
  int position_of(int rank) const;  // O(n): once per call
  // Steps from `from` to this rank along the ring (0..n-1).
  int distance_from(int from_rank) const {
    return ((position - position_of(from_rank)) % n + n) % n;
  }
};

// Pipelined algorithms cut their data into pieces of at least this many bytes.
constexpr size_t kPieceBytes = 256 * 1024;
// What a pipeline's step costs beyond its bytes, in bytes of the wire's time: its latency times
// its bandwidth (tens of us at a few GB/s between hosts, a few us at tens of GB/s within one).
constexpr double kStepCostBytes = 128 * 1024;

// The pieces of a chain of `n` ranks over `count` elements.  A chain takes pieces + n - 2
// steps of a piece each, so sqrt((n - 2) bytes / step cost) pieces take the least time: none
// but one where nothing overlaps (n <= 2: a piece per step was 256 sequential round trips for
// a 64 MB broadcast between two hosts, 1.8 GB/s on a wire of 5), and none smaller than
// kPieceBytes.
inline size_t chain_pieces(size_t count, size_t elem_size, int n) {
  if (count == 0) return 0;
  if (n <= 2) return 1;
  const size_t elem = std::max<size_t>(elem_size, 1);
  const size_t per_piece = std::max<size_t>(kPieceBytes / elem, 1);
  const size_t most = (count + per_piece - 1) / per_piece;
  const double bytes = static_cast<double>(count) * static_cast<double>(elem);
  const double best = std::sqrt((n - 2) * bytes / kStepCostBytes);
  return std::clamp<size_t>(static_cast<size_t>(std::llround(best)), 1, most);
}

// An algorithm that runs along the plan's ring.
class RingAlgorithm : public Algorithm {
 public:
  explicit RingAlgorithm(const CollArgs &args) : Algorithm(args), ring_(args) {}

 protected:
  RingView ring_;
};

// A pipelined chain along the ring: the data cut into pieces that follow each other one step
// apart down the chain's n - 1 hops, so it takes pieces + n - 2 steps.
class ChainAlgorithm : public RingAlgorithm {
 public:
  explicit ChainAlgorithm(const CollArgs &args)
      : RingAlgorithm(args),
        pieces_(static_cast<int>(chain_pieces(args.count, args.elem_size, ring_.n))) {}

  int num_steps() const override { return nothing_moves() ? 1 : pieces_ + ring_.n - 2; }

 protected:
  bool nothing_moves() const { return ring_.n == 1 || pieces_ == 0; }
  Span piece(Buffer buffer, int j) const {
    size_t begin = part_begin(args_.count, pieces_, j);
    return span(buffer, begin, part_begin(args_.count, pieces_, j + 1) - begin);
  }

  int pieces_;
};

}  // namespace cohort::coll
