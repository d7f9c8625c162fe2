#include "coll/multi_channel.h"

#include <algorithm>
#include <vector>

namespace cohort::coll {
namespace {

class MultiChannel final : public Algorithm {
 public:
  MultiChannel(const AlgorithmInfo &info, const CollArgs &args, int channels) : Algorithm(args) {
    for (int c = 0; c < channels; ++c) {
      Part part;
      part.begin = part_begin(args.count, channels, c);
      CollArgs sub = args;
      sub.count = part_begin(args.count, channels, c + 1) - part.begin;
      if (sub.count == 0) continue;
      sub.ring = &(*args.rings)[c];
      sub.ring_position = (*args.ring_positions)[c][args.rank];
      sub.rings = sub.ring_positions = nullptr;
      part.scratch_begin = scratch_;
      part.algorithm = info.make(sub);
      scratch_ += part.algorithm->scratch_count();
      steps_ = std::max(steps_, part.algorithm->num_steps());
      parts_.push_back(std::move(part));
    }
  }

  int num_steps() const override { return steps_; }
  size_t scratch_count() const override { return scratch_; }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    for (const Part &part : parts_) {
      if (s >= part.algorithm->num_steps()) continue;
      part.algorithm->step(s, &actions_);
      for (Action a : actions_) {
        shift(part, &a.dst);
        shift(part, &a.src);
        out->push_back(a);
      }
    }
  }

 private:
  struct Part {
    size_t begin = 0;          // of its elements in src and dst
    size_t scratch_begin = 0;  // of its scratch
    std::unique_ptr<Algorithm> algorithm;
  };

  static void shift(const Part &part, Span *span) {
    if (span->buffer == Buffer::kScratch) {
      span->offset += part.scratch_begin;
    } else if (span->buffer != Buffer::kUser) {
      span->offset += part.begin;
    }
  }

  std::vector<Part> parts_;
  int steps_ = 0;
  size_t scratch_ = 0;
  mutable std::vector<Action> actions_;  // one part's step, before shifting
};

}  // namespace

std::unique_ptr<Algorithm> make_multi_channel(const AlgorithmInfo &info, const CollArgs &args,
                                              int channels) {
  if (args.rings != nullptr) {
    channels = std::min(channels, static_cast<int>(args.rings->size()));
  }
  if (channels <= 1 || args.rings == nullptr || !info.splits) return info.make(args);
  return std::make_unique<MultiChannel>(info, args, channels);
}

}  // namespace cohort::coll
