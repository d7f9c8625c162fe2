#include "coll/schedule.h"

#include <cstring>

#include "coll/steps.h"

namespace cohort::coll {
namespace {
const char *const kNames[] = {"allreduce",      "reduce",   "broadcast", "allgather",
                              "reduce_scatter", "alltoall", "barrier",   "gather",
                              "scatter",        "scan",     "exscan",    "allgatherv",
                              "alltoallv",      "gatherv",  "scatterv",  "reduce_scatterv"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(Collective::kCount));
}  // namespace

const char *collective_name(Collective c) { return kNames[static_cast<int>(c)]; }

bool collective_from_name(const char *name, Collective *out) {
  for (int i = 0; i < static_cast<int>(Collective::kCount); ++i) {
    if (strcmp(name, kNames[i]) == 0) {
      *out = static_cast<Collective>(i);
      return true;
    }
  }
  return false;
}

bool is_vcollective(Collective c) {
  return c == Collective::kAllgatherv || c == Collective::kAlltoallv || c == Collective::kGatherv ||
         c == Collective::kScatterv || c == Collective::kReduceScatterv;
}

RingView::RingView(const CollArgs &args)
    : ring(*args.ring), n(static_cast<int>(args.ring->size())), position(args.ring_position) {
  for (int i = 0; position < 0 && i < n; ++i) {
    if (ring[i] == args.rank) position = i;
  }
}

int RingView::position_of(int rank) const {
  if (rank == ring[position]) return position;
  for (int i = 0; i < n; ++i) {
    if (ring[i] == rank) return i;
  }
  return -1;
}

}  // namespace cohort::coll
