// launch.h: from the call's record to its kernel's parameters and launch.
#include "tl_gpu/launch.h"

#include <algorithm>

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
    case Collective::kAllreduce: *kind = k::CollKind::kAllreduce; return true;
    default: return false;
  }
}

// A team of one GPU rank: every collective's result is its input (a barrier is nothing).
Status copy_alone(const coll::Call &call, cudaStream_t stream) {
  const size_t bytes = call.count * k::dtype_size(static_cast<k::DType>(call.dtype));
  if (call.collective == Collective::kBarrier || call.src == call.dst || bytes == 0) {
    return COHORT_SUCCESS;
  }
  return cuda_status(cudaMemcpyAsync(call.dst, call.src, bytes, cudaMemcpyDeviceToDevice, stream),
                     "copying a one-rank collective's input on the GPU");
}

static_assert(k::kOneShotBytes == coll::kOneShotMaxBytes,
              "the selection's one-shot limit is the kernels'");
static_assert(k::kLlBytes == coll::kLlMaxBytes, "the selection's LL limit is the kernels'");

Status too_big_for(const coll::Call &call, const char *algorithm, size_t most, size_t bytes) {
  return failf(COHORT_ERR_INVALID_ARG,
               "%s on GPU device memory: algorithm %s takes at most %zu bytes per rank, this "
               "call has %zu (check COHORT_COLL_ALGO)",
               coll::collective_name(call.collective), algorithm, most, bytes);
}

// The selection's algorithm in the kernels' terms: zero-copy only on a team that registered
// buffers (the same answer on every rank), with where this rank's src and dst (of src_bytes
// and dst_bytes) lie among its registrations; a one-shot call whose `bytes` per rank exceed
// the one-shot area is refused.
Status take_algorithm(const k::DeviceTeam &team, const Registrations &registered,
                      const coll::Call &call, size_t src_bytes, size_t dst_bytes, size_t bytes,
                      k::CollArgs *args) {
  const bool oneshot = call.algorithm == coll::AlgorithmId::kOneShot;
  const bool ll = call.algorithm == coll::AlgorithmId::kLl;
  const bool zerocopy =
      call.algorithm == coll::AlgorithmId::kZeroCopy && team.registered != nullptr;
  args->algo = oneshot    ? k::CollAlgo::kOneShot
               : ll       ? k::CollAlgo::kLl
               : zerocopy ? k::CollAlgo::kZeroCopy
                          : k::CollAlgo::kPipelined;  // allreduce: two-shot
  if (zerocopy) {
    args->src_ref = registered.find(call.src, src_bytes);
    args->dst_ref = registered.find(call.dst, dst_bytes);
  }
  if (oneshot && bytes > k::kOneShotBytes) {
    return too_big_for(call, "oneshot", k::kOneShotBytes, bytes);
  }
  if (ll && bytes > k::kLlBytes) return too_big_for(call, "ll", k::kLlBytes, bytes);
  return COHORT_SUCCESS;
}

}  // namespace

// The kernel's parameters: the call's arguments, the root as a local rank, the algorithm.
Status kernel_args(const k::DeviceTeam &team, const std::vector<int> &local_ranks,
                   const Registrations &registered, const coll::Call &call, k::CollArgs *args) {
  if (!kind_of(call.collective, &args->kind)) {
    return failf(COHORT_ERR_NOT_SUPPORTED, "%s on GPU device memory: no GPU kernel for it",
                 coll::collective_name(call.collective));
  }
  args->team = team;
  args->src = call.src;
  args->dst = call.dst;
  args->count = call.count;
  args->dtype = static_cast<k::DType>(call.dtype);
  args->op = static_cast<k::RedOp>(call.op);
  if (args->kind == k::CollKind::kBroadcast || args->kind == k::CollKind::kReduce) {
    const auto root = std::find(local_ranks.begin(), local_ranks.end(), call.root);
    args->root = static_cast<int>(root - local_ranks.begin());
  }
  // Bytes of each buffer: allreduce's, broadcast's and reduce's are one message; otherwise a
  // block per rank on the side that holds every rank's.
  const size_t bytes = call.count * k::dtype_size(args->dtype);
  const size_t all = bytes * static_cast<size_t>(team.size);
  const bool one = args->kind == k::CollKind::kAllreduce || args->kind == k::CollKind::kBroadcast ||
                   args->kind == k::CollKind::kReduce;
  return take_algorithm(
      team, registered, call, one || args->kind == k::CollKind::kAllgather ? bytes : all,
      one || args->kind == k::CollKind::kReduceScatter ? bytes : all, bytes, args);
}

Status launch_call(const k::DeviceTeam &team, const std::vector<int> &local_ranks,
                   const Registrations &registered, const coll::Call &call, cudaStream_t stream) {
  if (team.size == 1) return copy_alone(call, stream);
  k::CollArgs args;
  const Status s = kernel_args(team, local_ranks, registered, call, &args);
  if (is_error(s)) return s;
  std::string what =
      std::string("launching ") + coll::collective_name(call.collective) + " on the GPU";
  return cuda_status(k::launch_collective(args, stream), what.c_str());
}

}  // namespace cohort::tl_gpu
