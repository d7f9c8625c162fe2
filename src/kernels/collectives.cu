// The launcher of collectives.h: checks the call, sizes the grid, picks the kernel.
#include <algorithm>

#include "coll_common.cuh"
#include "collectives.h"
#include "ll_line.h"

namespace cohort::kernels {

static_assert(kLlSlotBytes == ll_lines(kLlBytes) * sizeof(LlLine),
              "a writer's LL slot holds the lines of the largest LL message");

namespace {

bool reduces(CollKind kind) {
  return kind == CollKind::kAllreduce || kind == CollKind::kReduce ||
         kind == CollKind::kReduceScatter;
}

bool valid(const CollArgs &a) {
  const int kind = static_cast<int>(a.kind);
  if (kind < 0 || kind > static_cast<int>(CollKind::kAllreduce)) return false;
  if (a.team.size < 1 || a.team.size > kMaxLocalRanks) return false;
  if (a.kind == CollKind::kBarrier) return true;
  if (!dtype_valid(a.dtype) || (reduces(a.kind) && !op_valid(a.op)) || a.count == 0) return false;
  if (a.algo == CollAlgo::kZeroCopy) {
    if (a.team.registered == nullptr) return false;  // every collective but the barrier has it
  } else if (a.algo == CollAlgo::kLl) {
    if (a.kind != CollKind::kAllreduce || a.count * dtype_size(a.dtype) > kLlBytes) return false;
  } else if (a.algo != CollAlgo::kOneShot && a.algo != CollAlgo::kPipelined) {
    return false;
  }
  const bool rooted = a.kind == CollKind::kBroadcast || a.kind == CollKind::kReduce;
  if (rooted && (a.root < 0 || a.root >= a.team.size)) return false;
  return a.algo != CollAlgo::kOneShot || a.count * dtype_size(a.dtype) <= kOneShotBytes;
}

}  // namespace

int collective_blocks(const CollArgs &args) {
  if (args.kind == CollKind::kBarrier) return 1;
  const size_t bytes = args.count * dtype_size(args.dtype);
  // One-shot: a block per 4 KB of each rank's part; LL: a line (8 bytes) per thread.
  // Pipelined: a block per step's worth, which for the exchanges is one slice of every rank's
  // block.
  const bool exchange = args.kind == CollKind::kAllgather || args.kind == CollKind::kAlltoall ||
                        args.kind == CollKind::kReduceScatter;
  const size_t per_block = args.algo == CollAlgo::kOneShot ? 4096
                           : args.algo == CollAlgo::kLl    ? kCollThreads * kLlPayload
                           : exchange ? slice_bytes(std::max(1, args.team.size))
                                      : kChunkBytes;
  const size_t wanted = (bytes + per_block - 1) / per_block;
  const size_t most = static_cast<size_t>(std::max(1, std::min(args.team.max_blocks, kMaxBlocks)));
  return static_cast<int>(std::max<size_t>(1, std::min(wanted, most)));
}

cudaError_t launch_collective(const CollArgs &args, cudaStream_t stream) {
  if (!valid(args)) return cudaErrorInvalidValue;
  const detail::CollKernel kernel =
      reduces(args.kind) ? detail::reduce_kernel_of(args.dtype, args.op) : detail::move_kernel();
  // cudaLaunchKernel answers for this launch alone (see allreduce.cu).
  void *params[] = {const_cast<CollArgs *>(&args)};
  return cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(collective_blocks(args)),
                          dim3(kCollThreads), params, 0, stream);
}

}  // namespace cohort::kernels
