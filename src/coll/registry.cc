// The algorithm registry: every schedule Cohort has, by collective and name.
#include <cstring>

#include "coll/schedule.h"

namespace cohort::coll {

std::unique_ptr<Algorithm> make_allreduce_ring(const CollArgs &args);
std::unique_ptr<Algorithm> make_allreduce_direct(const CollArgs &args);
std::unique_ptr<Algorithm> make_allreduce_hier(const CollArgs &args);
std::unique_ptr<Algorithm> make_reduce_scatter_ring(const CollArgs &args);
std::unique_ptr<Algorithm> make_allgather_ring(const CollArgs &args);
std::unique_ptr<Algorithm> make_broadcast_chain(const CollArgs &args);
std::unique_ptr<Algorithm> make_reduce_chain(const CollArgs &args);
std::unique_ptr<Algorithm> make_alltoall_pairwise(const CollArgs &args);
std::unique_ptr<Algorithm> make_barrier_dissemination(const CollArgs &args);
std::unique_ptr<Algorithm> make_gather_direct(const CollArgs &args);
std::unique_ptr<Algorithm> make_scatter_direct(const CollArgs &args);
std::unique_ptr<Algorithm> make_scan_chain(const CollArgs &args);
std::unique_ptr<Algorithm> make_exscan_chain(const CollArgs &args);

const std::vector<AlgorithmInfo> &algorithm_table() {
  static const std::vector<AlgorithmInfo> table = {
      {"ring", AlgorithmId::kRing, Collective::kAllreduce,
       "reduce-scatter then allgather around the plan's ring; 2(n-1)/n of the data per rank",
       make_allreduce_ring, kHostMemory, /*splits=*/true},
      {"direct", AlgorithmId::kDirect, Collective::kAllreduce,
       "every rank sends its input to all and reduces all inputs in rank order; one hop",
       make_allreduce_direct, kHostMemory, /*splits=*/true},
      {"hier", AlgorithmId::kHier, Collective::kAllreduce,
       "host inputs to the host's leader, leaders exchange partials, leaders send the result "
       "to their host; three steps, H-1 messages per leader between hosts",
       make_allreduce_hier, kHostMemory, /*splits=*/true},
      {"ring", AlgorithmId::kRing, Collective::kReduceScatter,
       "partial sums around the plan's ring, n-1 steps", make_reduce_scatter_ring, kHostMemory},
      {"ring", AlgorithmId::kRing, Collective::kAllgather,
       "blocks passed around the plan's ring, n-1 steps", make_allgather_ring, kHostMemory},
      {"chain", AlgorithmId::kChain, Collective::kBroadcast,
       "pipelined chain along the ring from the root", make_broadcast_chain, kHostMemory,
       /*splits=*/true},
      {"chain", AlgorithmId::kChain, Collective::kReduce,
       "pipelined chain along the ring into the root", make_reduce_chain, kHostMemory,
       /*splits=*/true},
      {"pairwise", AlgorithmId::kPairwise, Collective::kAlltoall,
       "step s: send to rank+s, receive from rank-s", make_alltoall_pairwise, kHostMemory},
      {"dissemination", AlgorithmId::kDissemination, Collective::kBarrier,
       "round k: signal rank+2^k, wait for rank-2^k", make_barrier_dissemination, kHostMemory},
      {"direct", AlgorithmId::kDirect, Collective::kGather,
       "every rank sends its block to the root; one step", make_gather_direct, kHostMemory},
      {"direct", AlgorithmId::kDirect, Collective::kScatter,
       "the root sends block q to rank q; one step", make_scatter_direct, kHostMemory},
      {"chain", AlgorithmId::kChain, Collective::kScan,
       "pipelined chain in rank order: rank r adds its input to the prefix of 0..r-1 and "
       "passes it on",
       make_scan_chain, kHostMemory},
      {"chain", AlgorithmId::kChain, Collective::kExscan,
       "pipelined chain in rank order: rank r keeps the prefix of 0..r-1 and passes it on with "
       "its input added",
       make_exscan_chain, kHostMemory},
      // The v-variants: the same schedules over each rank's own count and displacement.
      {"ring", AlgorithmId::kRing, Collective::kAllgatherv,
       "blocks of any size passed around the plan's ring", make_allgather_ring, kHostMemory},
      {"pairwise", AlgorithmId::kPairwise, Collective::kAlltoallv,
       "step s: send to rank+s, receive from rank-s", make_alltoall_pairwise, kHostMemory},
      {"direct", AlgorithmId::kDirect, Collective::kGatherv,
       "every rank sends its block to the root; one step", make_gather_direct, kHostMemory},
      {"direct", AlgorithmId::kDirect, Collective::kScatterv,
       "the root sends block q to rank q; one step", make_scatter_direct, kHostMemory},
      {"ring", AlgorithmId::kRing, Collective::kReduceScatterv,
       "partial sums of blocks of any size around the plan's ring, n-1 steps",
       make_reduce_scatter_ring, kHostMemory},
      // GPU kernels over the local ranks' windows (src/kernels).
      {"oneshot", AlgorithmId::kOneShot, Collective::kAllreduce,
       "GPU: every rank pushes its input into every peer's window, then reduces all of them; "
       "one handshake, up to 64 KB",
       nullptr, kDeviceMemory, /*splits=*/false, kOneShotMaxBytes},
      {"ll", AlgorithmId::kLl, Collective::kAllreduce,
       "GPU: every rank stores its input into every peer's window as lines of 8 bytes that carry "
       "their own flag (NCCL's LL), and reduces the peers' lines as they land; no fence and no "
       "handshake of its own, up to 16 KB",
       nullptr, kDeviceMemory, /*splits=*/false, kLlMaxBytes},
      {"twoshot", AlgorithmId::kTwoShot, Collective::kAllreduce,
       "GPU: per 128 KB step of each block, each rank reduces one slice of every rank's data "
       "and pushes the result to the others (reduce-scatter + allgather through the windows)",
       nullptr, kDeviceMemory},
      {"zerocopy", AlgorithmId::kZeroCopy, Collective::kAllreduce,
       "GPU: with every rank's buffers registered (cohort_mem_register), each rank reduces one "
       "slice straight from every rank's input into every rank's output; two-shot otherwise",
       nullptr, kDeviceMemory},
      {"oneshot", AlgorithmId::kOneShot, Collective::kBroadcast,
       "GPU: the root pushes its message into every peer's window; one handshake, up to 64 KB",
       nullptr, kDeviceMemory, /*splits=*/false, kOneShotMaxBytes},
      {"pipelined", AlgorithmId::kPipelined, Collective::kBroadcast,
       "GPU: the root stages 128 KB steps in its window, the peers pull them (two halves in "
       "turn)",
       nullptr, kDeviceMemory},
      {"zerocopy", AlgorithmId::kZeroCopy, Collective::kBroadcast,
       "GPU: with the root's input and every rank's output registered, each rank copies one "
       "slice of the root's input straight into every rank's output; pipelined otherwise",
       nullptr, kDeviceMemory},
      {"oneshot", AlgorithmId::kOneShot, Collective::kReduce,
       "GPU: every rank pushes its message into the root's window, the root reduces; one "
       "handshake, up to 64 KB",
       nullptr, kDeviceMemory, /*splits=*/false, kOneShotMaxBytes},
      {"pipelined", AlgorithmId::kPipelined, Collective::kReduce,
       "GPU: per step each rank reduces one slice of every rank's data and writes it into the "
       "root's window",
       nullptr, kDeviceMemory},
      {"zerocopy", AlgorithmId::kZeroCopy, Collective::kReduce,
       "GPU: with every rank's input and the root's output registered, each rank reduces one "
       "slice straight from every rank's input into the root's output; pipelined otherwise",
       nullptr, kDeviceMemory},
      {"oneshot", AlgorithmId::kOneShot, Collective::kAllgather,
       "GPU: every rank pushes its block into every peer's window; one handshake, up to 64 KB "
       "per rank",
       nullptr, kDeviceMemory, /*splits=*/false, kOneShotMaxBytes},
      {"pipelined", AlgorithmId::kPipelined, Collective::kAllgather,
       "GPU: per step every rank pushes a slice of its block into every peer's window (two "
       "halves in turn)",
       nullptr, kDeviceMemory},
      {"oneshot", AlgorithmId::kOneShot, Collective::kReduceScatter,
       "GPU: every rank pushes block q of its input into rank q's window, q reduces; one "
       "handshake, up to 64 KB per rank",
       nullptr, kDeviceMemory, /*splits=*/false, kOneShotMaxBytes},
      {"pipelined", AlgorithmId::kPipelined, Collective::kReduceScatter,
       "GPU: per step every rank pushes a slice of block q into rank q's window, q reduces (two "
       "halves in turn)",
       nullptr, kDeviceMemory},
      {"oneshot", AlgorithmId::kOneShot, Collective::kAlltoall,
       "GPU: every rank pushes block q of its input into rank q's window; one handshake, up to "
       "64 KB per peer",
       nullptr, kDeviceMemory, /*splits=*/false, kOneShotMaxBytes},
      {"pipelined", AlgorithmId::kPipelined, Collective::kAlltoall,
       "GPU: per step every rank pushes a slice of block q into rank q's window (two halves in "
       "turn)",
       nullptr, kDeviceMemory},
      {"zerocopy", AlgorithmId::kZeroCopy, Collective::kAllgather,
       "GPU: with every rank's output registered, each rank writes its block straight into "
       "every rank's output; pipelined otherwise",
       nullptr, kDeviceMemory},
      {"zerocopy", AlgorithmId::kZeroCopy, Collective::kReduceScatter,
       "GPU: with every rank's input registered, rank q reduces block q straight from every "
       "rank's input; pipelined otherwise",
       nullptr, kDeviceMemory},
      {"zerocopy", AlgorithmId::kZeroCopy, Collective::kAlltoall,
       "GPU: with every rank's output registered, each rank writes its block for q straight "
       "into q's output; pipelined otherwise",
       nullptr, kDeviceMemory},
      {"flags", AlgorithmId::kFlags, Collective::kBarrier,
       "GPU: every rank raises a flag in every peer's window", nullptr, kDeviceMemory},
  };
  return table;
}

const AlgorithmInfo *find_algorithm(Collective collective, const char *name) {
  for (const AlgorithmInfo &info : algorithm_table()) {
    if (info.collective == collective && strcmp(info.name, name) == 0) return &info;
  }
  return nullptr;
}

}  // namespace cohort::coll
