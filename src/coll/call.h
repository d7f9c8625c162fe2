// One collective call, as one record from the C API to the transport that runs it: the team's
// front end checks it and completes it with the selection table's algorithm; the host path
// turns it into a rank's schedule (schedule.h), the device transport into its kernel's
// parameters (tl/device_transport.h).  Plain data, no allocation: a CUDA graph may capture a
// call that carries it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort.h"

namespace cohort::coll {

enum class Collective : uint8_t {
  kAllreduce,
  kReduce,
  kBroadcast,
  kAllgather,
  kReduceScatter,
  kAlltoall,
  kBarrier,
  kGather,
  kScatter,
  kScan,
  kExscan,
  // The v-variants: the same schedules over per-rank blocks (CollArgs::layouts).
  kAllgatherv,
  kAlltoallv,
  kGatherv,
  kScatterv,
  kReduceScatterv,
  kCount
};

// What an algorithm is, whatever its collective: what code that runs algorithms itself (the
// device transport) dispatches on, instead of comparing names.
enum class AlgorithmId : uint8_t {
  kRing,
  kDirect,
  kHier,
  kChain,
  kPairwise,
  kDissemination,
  kOneShot,    // GPU: every rank's data into every window, one handshake
  kTwoShot,    // GPU allreduce: reduce-scatter + allgather through the windows
  kPipelined,  // GPU: steps through the chunk inboxes
  kZeroCopy,   // GPU: registered buffers reached in place
  kFlags,      // GPU barrier
  kLl,         // GPU allreduce: every rank's data into every window as lines carrying flags
};

// cohort.h's arguments of one call; `count` as cohort.h defines it for the collective.
struct Call {
  Collective collective = Collective::kBarrier;
  const void *src = nullptr;
  void *dst = nullptr;
  size_t count = 0;
  cohort_dtype_t dtype = COHORT_INT8;
  cohort_op_t op = COHORT_SUM;
  int root = 0;
  // The selection table's choice for this call (set by the front end before a transport
  // sees the call).
  AlgorithmId algorithm = AlgorithmId::kRing;
};

// Which buffers a rank uses: the root alone reads broadcast's and scatter's input and writes
// reduce's and gather's output; exscan leaves rank 0's output alone.
inline bool uses_src(const Call &c, int rank) {
  const bool root_only = c.collective == Collective::kBroadcast ||
                         c.collective == Collective::kScatter ||
                         c.collective == Collective::kScatterv;
  return c.collective != Collective::kBarrier && (!root_only || c.root == rank);
}
inline bool uses_dst(const Call &c, int rank) {
  if (c.collective == Collective::kExscan) return rank != 0;
  const bool root_only = c.collective == Collective::kReduce ||
                         c.collective == Collective::kGather ||
                         c.collective == Collective::kGatherv;
  return c.collective != Collective::kBarrier && (!root_only || c.root == rank);
}

}  // namespace cohort::coll
