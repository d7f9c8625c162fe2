// The allreduce launcher (allreduce.h): its kernels are the reduction kernels of
// reduce_coll.cu (device code in allreduce.cuh), launched as collectives.h launches.
#include "allreduce.h"
#include "collectives.h"

namespace cohort::kernels {
namespace {

CollArgs as_collective(const AllreduceArgs &args) {
  CollArgs c;
  c.team = args.team;
  c.kind = CollKind::kAllreduce;
  c.algo = args.algo == AllreduceAlgo::kOneShot    ? CollAlgo::kOneShot
           : args.algo == AllreduceAlgo::kZeroCopy ? CollAlgo::kZeroCopy
           : args.algo == AllreduceAlgo::kLl       ? CollAlgo::kLl
                                                   : CollAlgo::kPipelined;
  c.src = args.src;
  c.dst = args.dst;
  c.count = args.count;
  c.dtype = args.dtype;
  c.op = args.op;
  c.src_ref = args.src_ref;
  c.dst_ref = args.dst_ref;
  return c;
}

}  // namespace

int allreduce_blocks(const AllreduceArgs &args) { return collective_blocks(as_collective(args)); }

cudaError_t launch_allreduce(const AllreduceArgs &args, cudaStream_t stream) {
  if (args.algo != AllreduceAlgo::kOneShot && args.algo != AllreduceAlgo::kTwoShot &&
      args.algo != AllreduceAlgo::kZeroCopy && args.algo != AllreduceAlgo::kLl) {
    return cudaErrorInvalidValue;
  }
  return launch_collective(as_collective(args), stream);
}

}  // namespace cohort::kernels
