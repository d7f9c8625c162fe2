// Allreduce, reduce and reduce-scatter (allreduce.h, collectives.h): one kernel per dtype x
// op serves the three and both algorithms of each, and its one out-of-line copy of reduce_all
// (coll_common.cuh) every path: the build's time goes with the number of reductions compiled,
// so there is one per dtype x op in the library (reduce.cu's standalone kernels aside).
#include <array>

#include "allreduce.cuh"
#include "coll_common.cuh"
#include "collectives.h"

namespace cohort::kernels {
namespace {

// Small reduce: every rank's message lands in the root's one-shot slots; the root reduces.
template <DType D, RedOp Op>
__device__ void reduce_oneshot(const CollArgs &a, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  const bool root = t.rank == a.root;
  const size_t offset = part.begin * elem;
  if (!root) {
    copy(block_threads(), oneshot_slot(t, a.root, t.rank, sequence) + offset, at(a.src, offset, 1),
         part.count * elem);
  }
  const uint64_t value = flag_value(sequence, 0);
  signal_peers(t, kFlagArrive, value);
  if (!wait_peers(t, kFlagArrive, value, sequence) || !root) return;
  const void *const *srcs = gather_inputs(t, at(a.src, offset, 1), [&](int q) {
    return oneshot_slot(t, t.rank, q, sequence) + offset;
  });
  reduce_all<D, Op>(at(a.dst, offset, 1), srcs, t.size, part.count, t.size);
}

// Small reduce-scatter: rank q's block of every rank's input lands in q's one-shot slots.
template <DType D, RedOp Op>
__device__ void reduce_scatter_oneshot(const CollArgs &a, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const size_t block_bytes = a.count * elem;
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  const size_t offset = part.begin * elem;
  for (int q = 0; q < t.size; ++q) {
    if (q == t.rank) continue;
    copy(block_threads(), oneshot_slot(t, q, t.rank, sequence) + offset,
         at(a.src, q * block_bytes + offset, 1), part.count * elem);
  }
  const uint64_t value = flag_value(sequence, 0);
  signal_peers(t, kFlagArrive, value);
  if (!wait_peers(t, kFlagArrive, value, sequence)) return;
  const void *const *srcs =
      gather_inputs(t, at(a.src, t.rank * block_bytes + offset, 1),
                    [&](int q) { return oneshot_slot(t, t.rank, q, sequence) + offset; });
  reduce_all<D, Op>(at(a.dst, offset, 1), srcs, t.size, part.count, t.size);
}

// Large reduce-scatter: per step, each rank's piece of q's block lands in q's inbox (the
// step's half, a slice per writer), and q reduces them into its output.  The halves take
// turns as in move.cu's exchange_pipelined.
template <DType D, RedOp Op>
__device__ void reduce_scatter_pipelined(const CollArgs &a, uint64_t sequence) {
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const size_t block_bytes = a.count * elem;
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  const size_t slice_size = slice_bytes(t.size);
  const size_t step_elems = slice_size / elem;
  uint32_t step = 0;
  for (size_t done = 0; done < part.count; done += step_elems, ++step) {
    const size_t offset = (part.begin + done) * elem;
    const size_t len = min(step_elems, part.count - done);
    const int half = static_cast<int>(step & 1);
    const uint64_t value = flag_value(sequence, step);
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank) continue;
      copy(block_threads(), chunk_inbox(t, q, half) + t.rank * slice_size,
           at(a.src, q * block_bytes + offset, 1), len * elem);
    }
    signal_peers(t, kFlagArrive, value);
    if (!wait_peers(t, kFlagArrive, value, sequence)) return;
    const void *const *srcs =
        gather_inputs(t, at(a.src, t.rank * block_bytes + offset, 1),
                      [&](int q) { return chunk_inbox(t, t.rank, half) + q * slice_size; });
    reduce_all<D, Op>(at(a.dst, offset, 1), srcs, t.size, len, t.size);
  }
  end_barrier(t, sequence);
}

// Registered inputs, any size: rank q reduces block q straight from every rank's input into
// its own output, a step of kChunkBytes per block at a time; only the inputs need registering
// (the peers read them, nobody writes another rank's output).  Pipelined when some rank's input
// is not registered.
template <DType D, RedOp Op>
__device__ void reduce_scatter_zerocopy(const CollArgs &a, uint64_t sequence) {
  __shared__ ZeroCopyBuffers bufs;
  const ZeroCopyStart start = zerocopy_start(a, sequence, ZeroCopyNeeds{true, false}, bufs);
  if (start == ZeroCopyStart::kStopped) return;
  if (start == ZeroCopyStart::kUnregistered) return reduce_scatter_pipelined<D, Op>(a, sequence);
  const DeviceTeam &t = a.team;
  constexpr size_t elem = dtype_size(D);
  const size_t block_bytes = a.count * elem;
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  const size_t step_elems = kChunkBytes / elem;
  for (size_t done = 0; done < part.count; done += step_elems) {
    const size_t offset = (part.begin + done) * elem;
    const size_t len = min(step_elems, part.count - done);
    const size_t at_block = t.rank * block_bytes + offset;
    const void *const *srcs = gather_inputs(t, bufs.src[t.rank] + at_block,
                                            [&](int q) { return bufs.src[q] + at_block; });
    reduce_all<D, Op>(at(a.dst, offset, 1), srcs, t.size, len, t.size);
  }
  end_barrier(t, sequence);  // every peer read its block of this rank's input
}

template <DType D, RedOp Op>
__global__ void __launch_bounds__(kCollThreads) reduce_coll(const __grid_constant__ CollArgs a) {
  const uint64_t sequence = *a.team.sequence;
  const bool oneshot = a.algo == CollAlgo::kOneShot;
  if (team_stopped(a.team, sequence)) {
    // nothing: peers would take this call's data for a later one's
  } else if (a.kind == CollKind::kReduceScatter) {
    if (a.algo == CollAlgo::kZeroCopy) {
      reduce_scatter_zerocopy<D, Op>(a, sequence);
    } else if (oneshot) {
      reduce_scatter_oneshot<D, Op>(a, sequence);
    } else {
      reduce_scatter_pipelined<D, Op>(a, sequence);
    }
  } else if (a.algo == CollAlgo::kZeroCopy) {
    zerocopy_reduction<D, Op>(a, sequence);  // allreduce, or reduce: into the root's output
  } else if (a.algo == CollAlgo::kLl) {
    allreduce_ll<D, Op>(a, sequence);
  } else if (!oneshot) {
    twoshot<D, Op>(a, sequence);  // allreduce, or reduce: the reduced slices to the root alone
  } else if (a.kind == CollKind::kAllreduce) {
    allreduce_oneshot<D, Op>(a, sequence);
  } else {
    reduce_oneshot<D, Op>(a, sequence);
  }
  finish_block(a.team, sequence);
}

using Row = std::array<detail::CollKernel, kNumRedOps>;

template <DType D>
constexpr Row row() {
  return {reduce_coll<D, RedOp::kSum>, reduce_coll<D, RedOp::kProd>, reduce_coll<D, RedOp::kMin>,
          reduce_coll<D, RedOp::kMax>, reduce_coll<D, RedOp::kAvg>};
}

// Every dtype x op, in DType and RedOp order.
const std::array<Row, kNumDTypes> kKernels = {
    row<DType::kInt8>(),    row<DType::kUint8>(),   row<DType::kInt32>(),   row<DType::kUint32>(),
    row<DType::kInt64>(),   row<DType::kUint64>(),  row<DType::kFloat16>(), row<DType::kBfloat16>(),
    row<DType::kFloat32>(), row<DType::kFloat64>(),
};

}  // namespace

detail::CollKernel detail::reduce_kernel_of(DType dtype, RedOp op) {
  return kKernels[static_cast<int>(dtype)][static_cast<int>(op)];
}

}  // namespace cohort::kernels
