// Allreduce kernels over the team's windows (allreduce.h): one-shot and two-shot.  Block b of
// every rank handles the same part of the message, so blocks trade only with their namesakes
// on the other ranks and never wait for another block of their own grid.
#include "allreduce.h"
#include "handshake.cuh"
#include "primitives.cuh"

namespace cohort::kernels {
namespace {

constexpr int kThreads = 512;
constexpr size_t kAlignBytes = 16;  // parts start 16-byte aligned relative to the buffer

struct Part {
  size_t begin;  // element
  size_t count;
};

// Block `block`'s part of `count` elements split over `blocks`, in 16-byte units.
__host__ __device__ inline Part split(size_t count, size_t elem, unsigned index, unsigned parts) {
  const size_t unit = kAlignBytes / elem;  // elements per unit (elem <= 16)
  const size_t units = (count + unit - 1) / unit;
  const size_t per = (units + parts - 1) / parts;
  const size_t begin = per * unit * index < count ? per * unit * index : count;
  const size_t end = per * unit * (index + 1) < count ? per * unit * (index + 1) : count;
  return {begin, end - begin};
}

__device__ inline char *at(const void *base, size_t elements, size_t elem) {
  return static_cast<char *>(const_cast<void *>(base)) + elements * elem;
}

// dst = srcs[0] OP ... OP srcs[n-1] over `count` elements, in rank order, kMaxReduceInputs
// inputs per pass (a later pass folds the earlier result in first).  dst may be srcs[0] only.
template <DType D, RedOp Op>
__device__ void reduce_all(void *dst, const void *const *srcs, int n, size_t count, int divisor) {
  constexpr RedOp kFold = Op == RedOp::kAvg ? RedOp::kSum : Op;
  if (n == 1) {  // a team of one: the data as it is (an average over one rank is the value)
    if (dst != srcs[0]) copy(block_threads(), dst, srcs[0], count * dtype_size(D));
    __syncthreads();
    return;
  }
  __shared__ const void *inputs[kMaxReduceInputs];
  int done = 0;
  while (done < n) {
    const int carried = done == 0 ? 0 : 1;
    const int take = min(n - done, kMaxReduceInputs - carried);
    __syncthreads();
    if (threadIdx.x == 0) {
      if (carried) inputs[0] = dst;
      for (int i = 0; i < take; ++i) inputs[carried + i] = srcs[done + i];
    }
    __syncthreads();
    ReduceOperands operands{dst, inputs, carried + take, count, divisor};
    done += take;
    if (done == n) {
      reduce<D, Op>(block_threads(), operands);
    } else {
      reduce<D, kFold>(block_threads(), operands);
    }
  }
  __syncthreads();
}

template <DType D, RedOp Op>
__global__ void __launch_bounds__(kThreads) oneshot(const __grid_constant__ AllreduceArgs a) {
  const DeviceTeam &t = a.team;
  const uint64_t sequence = *t.sequence;
  if (team_stopped(t, sequence)) return finish_block(t, sequence);
  constexpr size_t elem = dtype_size(D);
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  const int parity = static_cast<int>(sequence & 1);
  auto slot = [&](int owner, int writer) {
    return t.windows[owner] + t.layout.oneshot_offset +
           (static_cast<size_t>(parity) * t.size + writer) * kOneShotBytes + part.begin * elem;
  };
  // More ranks than one pass reduces: this rank's data joins from its own slot too, so that
  // an in-place dst is written only by the last pass.
  const bool own_slot = t.size > kMaxReduceInputs && a.src == a.dst;
  for (int q = 0; q < t.size; ++q) {
    if (q != t.rank || own_slot) {
      copy(block_threads(), slot(q, t.rank), at(a.src, part.begin, elem), part.count * elem);
    }
  }
  const uint64_t value = flag_value(sequence, 0);
  signal_peers(t, kFlagArrive, value);
  if (wait_peers(t, kFlagArrive, value, sequence)) {
    __shared__ const void *srcs[kMaxLocalRanks];
    if (threadIdx.x < t.size) {
      const int q = threadIdx.x;
      srcs[q] = q == t.rank && !own_slot ? at(a.src, part.begin, elem) : slot(t.rank, q);
    }
    __syncthreads();
    reduce_all<D, Op>(at(a.dst, part.begin, elem), srcs, t.size, part.count, t.size);
  }
  finish_block(t, sequence);
}

template <DType D, RedOp Op>
__global__ void __launch_bounds__(kThreads) twoshot(const __grid_constant__ AllreduceArgs a) {
  const DeviceTeam &t = a.team;
  const uint64_t sequence = *t.sequence;
  if (team_stopped(t, sequence)) return finish_block(t, sequence);
  constexpr size_t elem = dtype_size(D);
  const Part part = split(a.count, elem, blockIdx.x, gridDim.x);
  // A step covers size slices of slice_bytes, one per rank.
  const size_t slice_bytes = kChunkBytes / t.size / kAlignBytes * kAlignBytes;
  const size_t step_elems = slice_bytes / elem * t.size;
  char *const inbox = t.windows[t.rank] + t.layout.chunks_offset + blockIdx.x * 2 * kChunkBytes;
  auto inbox_of = [&](int owner, int gather) {
    return t.windows[owner] + t.layout.chunks_offset + blockIdx.x * 2 * kChunkBytes +
           (gather ? kChunkBytes : 0) + static_cast<size_t>(t.rank) * slice_bytes;
  };
  const bool own_slot = t.size > kMaxReduceInputs && a.src == a.dst;
  __shared__ const void *srcs[kMaxLocalRanks];
  uint32_t step = 0;
  for (size_t done = 0; done < part.count; done += step_elems, ++step) {
    const size_t base = part.begin + done;
    const size_t len = min(step_elems, part.count - done);
    auto slice = [&](int q) { return split(len, elem, q, t.size); };
    const uint64_t value = flag_value(sequence, step);
    // Reduce-scatter: slice q of this step goes to rank q's inbox.
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank && !own_slot) continue;
      copy(block_threads(), inbox_of(q, 0), at(a.src, base + slice(q).begin, elem),
           slice(q).count * elem);
    }
    signal_peers(t, kFlagArrive, value);
    if (!wait_peers(t, kFlagArrive, value, sequence)) break;
    if (threadIdx.x < t.size) {
      const int q = threadIdx.x;
      srcs[q] = q == t.rank && !own_slot ? at(a.src, base + slice(q).begin, elem)
                                         : inbox + static_cast<size_t>(q) * slice_bytes;
    }
    __syncthreads();
    const Part mine = slice(t.rank);
    char *result = at(a.dst, base + mine.begin, elem);
    reduce_all<D, Op>(result, srcs, t.size, mine.count, t.size);
    // Allgather: this rank's reduced slice to every peer's gather inbox.
    for (int q = 0; q < t.size; ++q) {
      if (q != t.rank) copy(block_threads(), inbox_of(q, 1), result, mine.count * elem);
    }
    signal_peers(t, kFlagResult, value);
    if (!wait_peers(t, kFlagResult, value, sequence)) break;
    for (int q = 0; q < t.size; ++q) {
      if (q == t.rank) continue;
      copy(block_threads(), at(a.dst, base + slice(q).begin, elem),
           inbox + kChunkBytes + static_cast<size_t>(q) * slice_bytes, slice(q).count * elem);
    }
    __syncthreads();  // the gather inbox is free again before this block signals the next step
  }
  finish_block(t, sequence);
}

using Kernel = void (*)(AllreduceArgs);

template <DType D, RedOp Op>
Kernel pick(AllreduceAlgo algo) {
  return algo == AllreduceAlgo::kOneShot ? oneshot<D, Op> : twoshot<D, Op>;
}

template <DType D>
Kernel pick(RedOp op, AllreduceAlgo algo) {
  switch (op) {
    case RedOp::kSum: return pick<D, RedOp::kSum>(algo);
    case RedOp::kProd: return pick<D, RedOp::kProd>(algo);
    case RedOp::kMin: return pick<D, RedOp::kMin>(algo);
    case RedOp::kMax: return pick<D, RedOp::kMax>(algo);
    case RedOp::kAvg: return pick<D, RedOp::kAvg>(algo);
  }
  return nullptr;
}

Kernel pick(DType dtype, RedOp op, AllreduceAlgo algo) {
  switch (dtype) {
    case DType::kInt8: return pick<DType::kInt8>(op, algo);
    case DType::kUint8: return pick<DType::kUint8>(op, algo);
    case DType::kInt32: return pick<DType::kInt32>(op, algo);
    case DType::kUint32: return pick<DType::kUint32>(op, algo);
    case DType::kInt64: return pick<DType::kInt64>(op, algo);
    case DType::kUint64: return pick<DType::kUint64>(op, algo);
    case DType::kFloat16: return pick<DType::kFloat16>(op, algo);
    case DType::kBfloat16: return pick<DType::kBfloat16>(op, algo);
    case DType::kFloat32: return pick<DType::kFloat32>(op, algo);
    case DType::kFloat64: return pick<DType::kFloat64>(op, algo);
  }
  return nullptr;
}

}  // namespace

int allreduce_blocks(const AllreduceArgs &args) {
  const size_t bytes = args.count * dtype_size(args.dtype);
  // One-shot: a block per 4 KB; two-shot: a block per pipeline step's worth.
  const size_t per_block = args.algo == AllreduceAlgo::kOneShot ? 4096 : kChunkBytes;
  const size_t wanted = (bytes + per_block - 1) / per_block;
  const size_t most = static_cast<size_t>(std::max(1, std::min(args.team.max_blocks, kMaxBlocks)));
  return static_cast<int>(std::max<size_t>(1, std::min(wanted, most)));
}

cudaError_t launch_allreduce(const AllreduceArgs &args, cudaStream_t stream) {
  const bool valid = dtype_valid(args.dtype) && op_valid(args.op) && args.count > 0 &&
                     args.team.size >= 1 && args.team.size <= kMaxLocalRanks &&
                     (args.algo == AllreduceAlgo::kTwoShot ||
                      (args.algo == AllreduceAlgo::kOneShot &&
                       args.count * dtype_size(args.dtype) <= kOneShotBytes));
  if (!valid) return cudaErrorInvalidValue;
  // cudaLaunchKernel answers for this launch alone (cudaGetLastError after <<<>>> could
  // return, and clear, an earlier error of the caller's).
  void *params[] = {const_cast<AllreduceArgs *>(&args)};
  return cudaLaunchKernel(reinterpret_cast<const void *>(pick(args.dtype, args.op, args.algo)),
                          dim3(allreduce_blocks(args)), dim3(kThreads), params, 0, stream);
}

}  // namespace cohort::kernels
