// Hierarchical allreduce for teams that span hosts: each host's ranks send their input to the
// host's leader (its lowest rank), which reduces them in rank order; the leaders exchange
// their hosts' partial results and combine them in host order; each leader sends the result
// to its host's ranks.  Three steps, and only H-1 messages per leader cross hosts (direct
// sends n-1 per rank): the choice for small messages between hosts.  Every leader combines
// the same partials in the same order, so results are bit-identical everywhere.
#include "coll/steps.h"

namespace cohort::coll {
namespace {

class AllreduceHier : public Algorithm {
 public:
  explicit AllreduceHier(const CollArgs &args) : Algorithm(args) {
    const int n = args.size;
    auto node = [&](int r) { return args.node_of_rank ? (*args.node_of_rank)[r] : 0; };
    const int mine = node(args.rank);
    for (int r = 0; r < n; ++r) {
      if (node(r) == mine) locals_.push_back(r);
      if (node(r) >= static_cast<int>(leaders_.size())) leaders_.resize(node(r) + 1, -1);
      if (leaders_[node(r)] < 0) leaders_[node(r)] = r;
    }
    node_ = mine;
  }

  int num_steps() const override { return args_.size == 1 ? 1 : 3; }

  size_t scratch_count() const override {
    return args_.size == 1 ? 0 : (locals_.size() + leaders_.size()) * args_.count;
  }

  void step(int s, std::vector<Action> *out) const override {
    out->clear();
    const Span input = span(Buffer::kSrc, 0, args_.count);
    const Span dst = span(Buffer::kDst, 0, args_.count);
    const int leader = locals_[0];
    if (args_.size == 1) {
      if (!args_.in_place) copy(out, dst, input);
      if (args_.op == COHORT_AVG) finalize(out, dst);
      return;
    }
    const bool leading = args_.rank == leader;
    if (s == 0) {  // the host's inputs to its leader, reduced in rank order into its partial
      if (!leading) return send(out, leader, input);
      for (size_t k = 1; k < locals_.size(); ++k) recv(out, locals_[k], local_slot(k));
      copy(out, partial(), input);
      for (size_t k = 1; k < locals_.size(); ++k) reduce(out, partial(), local_slot(k));
    } else if (s == 1) {  // leaders swap partials and combine them in host order
      if (!leading) return;
      for (int h = 0; h < static_cast<int>(leaders_.size()); ++h) {
        if (h == node_ || leaders_[h] < 0) continue;
        send(out, leaders_[h], partial());
        recv(out, leaders_[h], host_slot(h));
      }
      bool first = true;
      for (int h = 0; h < static_cast<int>(leaders_.size()); ++h) {
        if (leaders_[h] < 0) continue;
        const Span from = h == node_ ? partial() : host_slot(h);
        first ? copy(out, dst, from) : reduce(out, dst, from);
        first = false;
      }
      if (args_.op == COHORT_AVG) finalize(out, dst);
    } else if (leading) {  // the result to the host's ranks
      for (size_t k = 1; k < locals_.size(); ++k) send(out, locals_[k], dst);
    } else {
      recv(out, leader, dst);
    }
  }

 private:
  Span partial() const { return span(Buffer::kScratch, 0, args_.count); }
  Span local_slot(size_t k) const { return span(Buffer::kScratch, k * args_.count, args_.count); }
  Span host_slot(int h) const {
    return span(Buffer::kScratch, (locals_.size() + h) * args_.count, args_.count);
  }

  std::vector<int> locals_;   // team ranks of this host, ascending (the leader first)
  std::vector<int> leaders_;  // by host index: its lowest rank
  int node_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> make_allreduce_hier(const CollArgs &args) {
  return std::make_unique<AllreduceHier>(args);
}

}  // namespace cohort::coll
