// Collective algorithms as schedules: pure index math over the team's plan that says, step
// by step, which span of which buffer goes to or comes from which peer.  Executors (host
// threads over shared memory and UCX now; GPU kernels later) move the bytes; an algorithm
// never knows how.
//
// Contract for executors:
// - Steps run in order.  Within a step, the sends and receives may proceed concurrently; the
//   step's local actions (copy, reduce, finalize) run after all of them completed, in listed
//   order.
// - Messages between an ordered pair of ranks are matched in order: a rank's n-th receive
//   from p takes p's n-th send to it.  A receive's span has the count of the matching send.
// - A step ends when its sends completed (their spans may be written again) and its receives
//   delivered; a send's span is not written by its own step.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "coll/call.h"
#include "cohort.h"

namespace cohort::coll {

enum class Buffer : uint8_t {
  kSrc,      // the caller's input (== kDst in place)
  kDst,      // the caller's output
  kScratch,  // executor-owned, sized by Algorithm::scratch_count()
  kUser,     // one of the caller's buffers of a send/recv group, by Span::user
};

// `count` elements from element `offset` of a buffer.
struct Span {
  Buffer buffer = Buffer::kSrc;
  size_t offset = 0;
  size_t count = 0;
  uint32_t user = 0;  // kUser: which buffer
};

enum class Verb : uint8_t {
  kSend,        // `src` to `peer`
  kRecv,        // from `peer` into `dst`
  kRecvReduce,  // from `peer`: dst = received OP src (src may be dst)
  kCopy,        // local: dst = src
  kReduce,      // local: dst = dst OP src
  kFinalize,    // local: dst /= team size (AVG; other ops have no finalize)
};

struct Action {
  Verb verb = Verb::kCopy;
  int peer = -1;  // team rank, for sends and receives
  Span dst;
  Span src;
};

const char *collective_name(Collective c);  // "allreduce", "reduce_scatter", ...
bool collective_from_name(const char *name, Collective *out);
bool is_vcollective(Collective c);  // allgatherv, alltoallv, gatherv, scatterv, reduce_scatterv

// One blocked buffer of a v-variant: block k has counts[k] elements from element displs[k].
struct BlockLayout {
  std::vector<size_t> counts;
  std::vector<size_t> displs;
  Span block(Buffer buffer, int k) const { return Span{buffer, displs[k], counts[k]}; }
};

// A v-variant's blocked buffers, copied from the caller's arrays (a posted call outlives them).
// `send` lays out the input (and alltoall's in-place scratch copy of it), `recv` the output;
// an empty one is not blocked on this rank (gatherv's input, a non-root's buffers).
struct BlockLayouts {
  BlockLayout send;
  BlockLayout recv;
};

// Memory kinds as a set: bit k stands for cohort_memory_kind_t k.
using MemoryKinds = uint32_t;
constexpr MemoryKinds memory_bit(cohort_memory_kind_t kind) { return MemoryKinds{1} << kind; }
// Every kind the CPU reaches: what the host executor runs on.
constexpr MemoryKinds kHostMemory = memory_bit(COHORT_MEMORY_HOST) |
                                    memory_bit(COHORT_MEMORY_CUDA_HOST) |
                                    memory_bit(COHORT_MEMORY_CUDA_MANAGED);
constexpr MemoryKinds kDeviceMemory = memory_bit(COHORT_MEMORY_CUDA_DEVICE);
constexpr MemoryKinds kAnyMemory = kHostMemory | kDeviceMemory;

// What one rank calls.  Counts are per the usual definitions: allreduce/reduce/broadcast:
// `count` elements; allgather: `count` from each rank (output size x count); reduce-scatter:
// `count` to each rank (input size x count); alltoall: `count` to and from each rank;
// gather: `count` from each rank (the root's output size x count); scatter: `count` to each
// rank (the root's input size x count); scan, exscan: `count` elements.  The v-variants: the
// blocks are `layouts`', and `count` is this rank's own one (the block it sends to or gets
// from itself: allgatherv's and gatherv's input, scatterv's and reduce_scatterv's output).
struct CollArgs {
  Collective collective = Collective::kAllreduce;
  size_t count = 0;
  cohort_op_t op = COHORT_SUM;
  int root = 0;
  bool in_place = false;  // gather, scatter: only ever on the root (the others have one buffer)
  int rank = 0;
  int size = 1;
  size_t elem_size = 1;  // bytes per element: pipelined algorithms size their pieces by it
  cohort_memory_kind_t memory = COHORT_MEMORY_HOST;  // of the buffers
  // The plan's ring of the channel, as team ranks in ring order (size entries).
  const std::vector<int> *ring = nullptr;
  int ring_position = -1;  // this rank's index in *ring, when the caller knows it (the plan does)
  // Every channel's ring and each rank's position in it (the plan's), for algorithms that run
  // on several channels (null: one channel, `ring`).
  const std::vector<std::vector<int>> *rings = nullptr;
  const std::vector<std::vector<int>> *ring_positions = nullptr;
  // The host index of each team rank (null: one host), for hierarchical algorithms.
  const std::vector<int> *node_of_rank = nullptr;
  // The v-variants' per-rank blocks; null: the uniform layout, block k at k * count.
  std::shared_ptr<const BlockLayouts> layouts;
};

// One rank's schedule for one call.  Cheap to make; steps are computed on demand, without
// allocation beyond `out`'s capacity.
class Algorithm {
 public:
  explicit Algorithm(const CollArgs &args) : args_(args) {}
  virtual ~Algorithm() = default;
  virtual int num_steps() const = 0;
  virtual size_t scratch_count() const { return 0; }
  // Clears `out` and appends step `s`'s actions.
  virtual void step(int s, std::vector<Action> *out) const = 0;
  const CollArgs &args() const { return args_; }

 protected:
  // Block `k` of a buffer that holds one block per rank (allgather's output, alltoall's
  // buffers, a scratch slot per rank): `count` elements at k * count, or in a v-variant the
  // output's layout for kDst and the input's for the others.
  Span block(Buffer buffer, int k) const {
    if (args_.layouts) {
      return (buffer == Buffer::kDst ? args_.layouts->recv : args_.layouts->send).block(buffer, k);
    }
    return Span{buffer, static_cast<size_t>(k) * args_.count, args_.count};
  }

  const CollArgs args_;
};

// A registered algorithm: what cohort_info prints and the tuning table names.
struct AlgorithmInfo {
  const char *name;  // unique within its collective: "ring", "direct", ...
  AlgorithmId id;
  Collective collective;
  const char *description;
  // The schedule a host executor runs; null for an algorithm that runs inside a GPU kernel
  // (the device transport, tl/device_transport.h, knows it by id).
  std::unique_ptr<Algorithm> (*make)(const CollArgs &args);
  MemoryKinds memory;  // the kinds its executor runs on
  // Whether its buffers are one contiguous range (allreduce, reduce, broadcast): then it can
  // run on several channels, each over a part (multi_channel.h).
  bool splits = false;
  // The largest message (bytes of one rank's, as the selection counts them) it takes: a rule
  // naming it covers no larger call, which falls to the next rule that matches.
  size_t max_bytes = SIZE_MAX;
};

// The one-shot GPU kernels' largest message (k::kOneShotBytes, checked where both are seen),
// and the LL allreduce's (k::kLlBytes).
constexpr size_t kOneShotMaxBytes = 64 << 10;
constexpr size_t kLlMaxBytes = 16 << 10;

const std::vector<AlgorithmInfo> &algorithm_table();
const AlgorithmInfo *find_algorithm(Collective collective, const char *name);

// Balanced split of `count` elements into `parts`: part k is [begin(k), begin(k + 1)).
inline size_t part_begin(size_t count, int parts, int k) {
  return count / parts * k + std::min<size_t>(static_cast<size_t>(k), count % parts);
}

}  // namespace cohort::coll
