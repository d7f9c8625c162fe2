#include "coll/p2p.h"

namespace cohort::coll {
namespace {

class P2PGroup : public Algorithm {
 public:
  P2PGroup(const CollArgs &args, std::vector<Action> actions)
      : Algorithm(args), actions_(std::move(actions)) {}

  int num_steps() const override { return 1; }
  void step(int, std::vector<Action> *out) const override { *out = actions_; }

 private:
  std::vector<Action> actions_;
};

}  // namespace

std::unique_ptr<Algorithm> make_p2p_group(const CollArgs &args, std::vector<Action> actions) {
  return std::make_unique<P2PGroup>(args, std::move(actions));
}

}  // namespace cohort::coll
