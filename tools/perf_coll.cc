#include "perf_coll.h"

#include <algorithm>
#include <climits>
#include <string>

#include "coll/dtype.h"

namespace cohort::perf {

bool reduces(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

bool rooted(Collective c) { return c == Collective::kReduce || c == Collective::kBroadcast; }

bool measured(Collective c) { return c <= Collective::kBarrier; }

bool parse_collective(std::string_view name, Collective *out) {
  std::string canonical(name);
  for (char &ch : canonical) {
    if (ch == '-') ch = '_';
  }
  if (canonical == "bcast") canonical = "broadcast";
  if (canonical == "reducescatter") canonical = "reduce_scatter";
  return coll::collective_from_name(canonical.c_str(), out) && measured(*out);
}

double busbw_factor(Collective c, int ranks) {
  const double n = ranks;
  switch (c) {
    case Collective::kAllreduce: return 2 * (n - 1) / n;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall: return (n - 1) / n;
    case Collective::kReduce:
    case Collective::kBroadcast: return 1;
    default: return 0;
  }
}

Shape shape_of(Collective c, size_t bytes, size_t elem_size, int ranks) {
  Shape s;
  const size_t n = static_cast<size_t>(ranks);
  switch (c) {
    case Collective::kAllreduce:
    case Collective::kReduce:
    case Collective::kBroadcast: s.count = s.send_count = s.recv_count = bytes / elem_size; break;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall: {
      // nccl-tests: (count / nranks) & -(16 / eltSize), so every block starts 16-byte aligned.
      const size_t align = 16 / elem_size;
      s.count = bytes / elem_size / n / align * align;
      s.send_count = c == Collective::kAllgather ? s.count : s.count * n;
      s.recv_count = c == Collective::kReduceScatter ? s.count : s.count * n;
      break;
    }
    default: return s;
  }
  s.bytes = std::max(s.send_count, s.recv_count) * elem_size;
  return s;
}

Call make_call(const CallArgs &args, const Buffers &buffers) {
  Call call;
  call.collective = args.collective;
  call.count = args.shape.count;
  call.dtype = args.dtype;
  call.op = args.op;
  call.root = args.root;
  call.rank = args.rank;
  call.ranks = args.ranks;
  call.in_place = args.in_place;
  call.send = buffers.input;
  call.recv = buffers.output;
  if (!args.in_place) return call;
  const size_t block_bytes = args.shape.count * coll::dtype_size(args.dtype);
  const size_t own_block = static_cast<size_t>(args.rank) * block_bytes;
  call.send = buffers.output;
  if (args.collective == Collective::kAllgather) call.send = buffers.output + own_block;
  if (args.collective == Collective::kReduceScatter) call.recv = buffers.output + own_block;
  return call;
}

StageCopy in_place_copy(const Call &call, const Shape &shape, const Buffers &buffers) {
  if (!call.in_place || call.collective == Collective::kBarrier) return {};
  if (call.collective == Collective::kBroadcast && call.rank != call.root) return {};
  // call.send is where the call reads its input in place, for every collective.
  return {const_cast<void *>(call.send), buffers.input,
          shape.send_count * coll::dtype_size(call.dtype)};
}

Region output_region(const Call &call) {
  char *recv = static_cast<char *>(call.recv);
  const size_t n = static_cast<size_t>(call.ranks);
  switch (call.collective) {
    case Collective::kAllreduce:
    case Collective::kBroadcast:
    case Collective::kReduceScatter: return {recv, call.count};
    case Collective::kReduce: return call.rank == call.root ? Region{recv, call.count} : Region{};
    case Collective::kAllgather:
    case Collective::kAlltoall: return {recv, call.count * n};
    default: return {};
  }
}

cohort_status_t run_cohort(cohort_team_t team, const Call &c) {
  switch (c.collective) {
    case Collective::kAllreduce:
      return cohort_allreduce(team, c.send, c.recv, c.count, c.dtype, c.op);
    case Collective::kReduce:
      return cohort_reduce(team, c.send, c.recv, c.count, c.dtype, c.op, c.root);
    case Collective::kBroadcast:
      return cohort_broadcast(team, c.send, c.recv, c.count, c.dtype, c.root);
    case Collective::kAllgather: return cohort_allgather(team, c.send, c.recv, c.count, c.dtype);
    case Collective::kReduceScatter:
      return cohort_reduce_scatter(team, c.send, c.recv, c.count, c.dtype, c.op);
    case Collective::kAlltoall: return cohort_alltoall(team, c.send, c.recv, c.count, c.dtype);
    default: return cohort_barrier(team);
  }
}

cohort_status_t run_cohort_stream(cohort_team_t team, const Call &c, void *stream) {
  switch (c.collective) {
    case Collective::kAllreduce:
      return cohort_allreduce_stream(team, c.send, c.recv, c.count, c.dtype, c.op, stream);
    case Collective::kReduce:
      return cohort_reduce_stream(team, c.send, c.recv, c.count, c.dtype, c.op, c.root, stream);
    case Collective::kBroadcast:
      return cohort_broadcast_stream(team, c.send, c.recv, c.count, c.dtype, c.root, stream);
    case Collective::kAllgather:
      return cohort_allgather_stream(team, c.send, c.recv, c.count, c.dtype, stream);
    case Collective::kReduceScatter:
      return cohort_reduce_scatter_stream(team, c.send, c.recv, c.count, c.dtype, c.op, stream);
    case Collective::kAlltoall:
      return cohort_alltoall_stream(team, c.send, c.recv, c.count, c.dtype, stream);
    default: return cohort_barrier_stream(team, stream);
  }
}

namespace {

// Cohort's mapping (cohort_dtype_to_mpi), except for fp16 and bf16, which have no MPI type:
// they move as 16-bit words (data movement needs no arithmetic type), and reductions of them
// are not run on MPI (mpi_unavailable).
MPI_Datatype mpi_type(cohort_dtype_t dtype) {
  if (dtype == COHORT_FLOAT16 || dtype == COHORT_BFLOAT16) return MPI_UINT16_T;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  cohort_dtype_to_mpi(dtype, &type);
  return type;
}

// Cohort's mapping (cohort_op_to_mpi); avg has no MPI op, and is not run on MPI.
MPI_Op mpi_op(cohort_op_t op) {
  MPI_Op mpi = MPI_OP_NULL;
  cohort_op_to_mpi(op, &mpi);
  return mpi;
}

}  // namespace

const char *mpi_unavailable(const Call &call) {
  if (call.count > static_cast<size_t>(INT_MAX)) return "count beyond MPI's int";
  if (!reduces(call.collective)) return nullptr;
  MPI_Datatype type;
  MPI_Op op;
  if (cohort_dtype_to_mpi(call.dtype, &type) != COHORT_SUCCESS) return "no MPI type";
  if (cohort_op_to_mpi(call.op, &op) != COHORT_SUCCESS) return "no MPI op";
  return nullptr;
}

int run_mpi(MPI_Comm comm, const Call &c) {
  const int count = static_cast<int>(c.count);
  const MPI_Datatype type = mpi_type(c.dtype);
  const MPI_Op op = mpi_op(c.op);
  const void *send = c.in_place ? MPI_IN_PLACE : c.send;
  switch (c.collective) {
    case Collective::kAllreduce: return MPI_Allreduce(send, c.recv, count, type, op, comm);
    case Collective::kReduce:
      // In place only the root passes MPI_IN_PLACE; the others' input is their one buffer.
      if (c.in_place && c.rank != c.root) send = c.send;
      return MPI_Reduce(send, c.recv, count, type, op, c.root, comm);
    case Collective::kBroadcast: {
      // The root sends from its input (only read), the others receive into their output.
      void *buffer = c.rank == c.root ? const_cast<void *>(c.send) : c.recv;
      return MPI_Bcast(buffer, count, type, c.root, comm);
    }
    case Collective::kAllgather: return MPI_Allgather(send, count, type, c.recv, count, type, comm);
    case Collective::kReduceScatter:
      // MPI's in-place reduce-scatter takes the whole input as recvbuf and leaves the result
      // at its start: the same buffer Cohort works in.
      return MPI_Reduce_scatter_block(send, c.in_place ? const_cast<void *>(c.send) : c.recv, count,
                                      type, op, comm);
    case Collective::kAlltoall: return MPI_Alltoall(send, count, type, c.recv, count, type, comm);
    default: return MPI_Barrier(comm);
  }
}

}  // namespace cohort::perf
