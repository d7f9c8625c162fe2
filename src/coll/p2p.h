// A send/recv group as a schedule: one step holding every operation of the group, in the
// order posted (the executor keeps the order per peer and moves different peers at once, so
// a group never deadlocks on bounded channels), and a local copy for each send to self,
// paired in order with the receives from self.  Spans are bytes of the caller's buffers
// (Buffer::kUser), so operations of different dtypes share one group.
#pragma once

#include <memory>
#include <vector>

#include "coll/schedule.h"

namespace cohort::coll {

std::unique_ptr<Algorithm> make_p2p_group(const CollArgs &args, std::vector<Action> actions);

}  // namespace cohort::coll
