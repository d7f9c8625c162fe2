// One algorithm on several channels: instance c runs over part c of the buffer on the plan's
// ring c, and step s of the whole holds every instance's step s, so the instances move side by
// side (the executor moves transfers to different peers at once, and keeps each peer's order:
// every rank merges the instances in the same order, so their messages still pair up).
// Only for algorithms whose buffers are one contiguous range (AlgorithmInfo::splits).
#pragma once

#include <memory>

#include "coll/schedule.h"

namespace cohort::coll {

// `channels` instances (at most the number of rings in args.rings); parts of no element are
// left out.  One channel (or rings null) is the algorithm itself.
std::unique_ptr<Algorithm> make_multi_channel(const AlgorithmInfo &info, const CollArgs &args,
                                              int channels);

}  // namespace cohort::coll
