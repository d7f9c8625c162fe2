// launch.h: from a DeviceCall to the launch of its kernel.
#include "tl_gpu/launch.h"

#include <algorithm>
#include <cstring>

#include "kernels/allreduce.h"
#include "kernels/collectives.h"
#include "tl_gpu/cuda_call.h"

namespace cohort::tl_gpu {
namespace {

namespace k = cohort::kernels;
using coll::Collective;

// The kernels' kind of a collective; false for one without GPU kernels.
bool kind_of(Collective c, k::CollKind *kind) {
  switch (c) {
    case Collective::kBroadcast: *kind = k::CollKind::kBroadcast; return true;
    case Collective::kReduce: *kind = k::CollKind::kReduce; return true;
    case Collective::kAllgather: *kind = k::CollKind::kAllgather; return true;
    case Collective::kReduceScatter: *kind = k::CollKind::kReduceScatter; return true;
    case Collective::kAlltoall: *kind = k::CollKind::kAlltoall; return true;
    case Collective::kBarrier: *kind = k::CollKind::kBarrier; return true;
    default: return false;
  }
}

// A team of one GPU rank: every collective's result is its input (a barrier is nothing).
Status copy_alone(const tl::DeviceCall &call, cudaStream_t stream) {
  const size_t bytes = call.count * k::dtype_size(static_cast<k::DType>(call.dtype));
  if (call.collective == Collective::kBarrier || call.src == call.dst || bytes == 0) {
    return COHORT_SUCCESS;
  }
  return cuda_status(cudaMemcpyAsync(call.dst, call.src, bytes, cudaMemcpyDeviceToDevice, stream),
                     "copying a one-rank collective's input on the GPU");
}

Status too_big_for_oneshot(const tl::DeviceCall &call, size_t bytes) {
  return failf(COHORT_ERR_INVALID_ARG,
               "%s on GPU device memory: algorithm oneshot takes at most %zu bytes per rank, this "
               "call has %zu (check COHORT_COLL_ALGO)",
               coll::collective_name(call.collective), k::kOneShotBytes, bytes);
}

// Zero-copy (registered buffers) on a team that registered some, where the buffers of this rank
// are found; two-shot on a team that never did (the same answer on every rank).
k::AllreduceAlgo allreduce_algo(const k::DeviceTeam &team, const Registrations &registered,
                                const tl::DeviceCall &call, k::AllreduceArgs *args) {
  if (strcmp(call.algorithm, "oneshot") == 0) return k::AllreduceAlgo::kOneShot;
  if (strcmp(call.algorithm, "zerocopy") != 0 || team.registered == nullptr) {
    return k::AllreduceAlgo::kTwoShot;
  }
  const size_t bytes = call.count * k::dtype_size(args->dtype);
  args->src_ref = registered.find(call.src, bytes);
  args->dst_ref = registered.find(call.dst, bytes);
  return k::AllreduceAlgo::kZeroCopy;
}

Status launch_allreduce(const k::DeviceTeam &team, const Registrations &registered,
                        const tl::DeviceCall &call, cudaStream_t stream) {
  k::AllreduceArgs args;
  args.team = team;
  args.src = call.src;
  args.dst = call.dst;
  args.count = call.count;
  args.dtype = static_cast<k::DType>(call.dtype);
  args.op = static_cast<k::RedOp>(call.op);
  args.algo = allreduce_algo(team, registered, call, &args);
  const size_t bytes = call.count * k::dtype_size(args.dtype);
  if (args.algo == k::AllreduceAlgo::kOneShot && bytes > k::kOneShotBytes) {
    return too_big_for_oneshot(call, bytes);
  }
  return cuda_status(k::launch_allreduce(args, stream), "launching allreduce on the GPU");
}

// Zero-copy where the selection chose it and the team registered buffers (the same answer on
// every rank), with where this rank's buffers lie; else one-shot or pipelined as chosen.
k::CollAlgo other_algo(const k::DeviceTeam &team, const Registrations &registered,
                       const tl::DeviceCall &call, k::CollArgs *args) {
  if (strcmp(call.algorithm, "oneshot") == 0) return k::CollAlgo::kOneShot;
  if (strcmp(call.algorithm, "zerocopy") != 0 || team.registered == nullptr) {
    return k::CollAlgo::kPipelined;
  }
  // Bytes of each buffer: a block per rank on the side that holds every rank's.
  const size_t block = call.count * k::dtype_size(args->dtype);
  const size_t all = block * static_cast<size_t>(team.size);
  const bool gathers = args->kind == k::CollKind::kAllgather;
  const bool scatters = args->kind == k::CollKind::kReduceScatter;
  args->src_ref = registered.find(call.src, gathers ? block : all);
  args->dst_ref = registered.find(call.dst, scatters ? block : all);
  return k::CollAlgo::kZeroCopy;
}

Status launch_other(const k::DeviceTeam &team, const std::vector<int> &local_ranks,
                    const Registrations &registered, const tl::DeviceCall &call,
                    cudaStream_t stream) {
  k::CollArgs args;
  if (!kind_of(call.collective, &args.kind)) {
    return failf(COHORT_ERR_NOT_SUPPORTED, "%s on GPU device memory: no GPU kernel for it",
                 coll::collective_name(call.collective));
  }
  args.team = team;
  args.src = call.src;
  args.dst = call.dst;
  args.count = call.count;
  args.dtype = static_cast<k::DType>(call.dtype);
  args.op = static_cast<k::RedOp>(call.op);
  const auto root = std::find(local_ranks.begin(), local_ranks.end(), call.root);
  args.root = static_cast<int>(root - local_ranks.begin());
  args.algo = other_algo(team, registered, call, &args);
  const size_t bytes = call.count * k::dtype_size(args.dtype);
  if (args.algo == k::CollAlgo::kOneShot && bytes > k::kOneShotBytes) {
    return too_big_for_oneshot(call, bytes);
  }
  std::string what =
      std::string("launching ") + coll::collective_name(call.collective) + " on the GPU";
  return cuda_status(k::launch_collective(args, stream), what.c_str());
}

}  // namespace

Status launch_call(const k::DeviceTeam &team, const std::vector<int> &local_ranks,
                   const Registrations &registered, const tl::DeviceCall &call,
                   cudaStream_t stream) {
  if (team.size == 1) return copy_alone(call, stream);
  if (call.collective == Collective::kAllreduce) {
    return launch_allreduce(team, registered, call, stream);
  }
  return launch_other(team, local_ranks, registered, call, stream);
}

}  // namespace cohort::tl_gpu
