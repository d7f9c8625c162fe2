// One collective call as cohort_perf makes it: the element counts nccl-tests derives from a
// byte size, where the input and output lie out of place and in place, the Cohort call, and
// the MPI call that does the same work on the same buffers.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string_view>

#include "cohort_mpi.h"
#include "coll/schedule.h"

namespace cohort::perf {

using coll::Collective;

bool reduces(Collective c);  // allreduce, reduce, reduce_scatter
bool rooted(Collective c);   // reduce, broadcast

// The collectives cohort_perf measures: allreduce through barrier (not yet gather, scatter
// and the scans, which nccl-tests has no shapes for).
bool measured(Collective c);

// A measured collective's name from coll::collective_name(), or "bcast", "reduce-scatter",
// "reducescatter".
bool parse_collective(std::string_view name, Collective *out);

// busbw = algbw * factor: what each rank's link carries, as nccl-tests' PERFORMANCE.md defines
// it; 0 for the barrier, which moves no data.
double busbw_factor(Collective c, int ranks);

// The counts nccl-tests gives a size of `bytes`.  Allreduce, reduce, broadcast: count =
// bytes / elem_size in both buffers.  Allgather, reduce-scatter, alltoall: `bytes` is the
// larger buffer (allgather's output, reduce-scatter's input, either of alltoall's), count is
// one rank's block, bytes / elem_size / ranks rounded down to a multiple of 16 bytes.
// Barrier: all zero.
struct Shape {
  size_t count = 0;       // the call's count argument (the "count" column)
  size_t send_count = 0;  // elements of the send buffer
  size_t recv_count = 0;  // elements of the receive buffer
  size_t bytes = 0;       // the "size" column: the larger buffer, as nccl-tests prints it
};
Shape shape_of(Collective c, size_t bytes, size_t elem_size, int ranks);

// Every run has two buffers of at least the sweep's largest size: `input` holds this rank's
// input and is never written by a run; out of place the output goes to `output`, in place
// the input is first copied into `output` (see in_place_copy) and the call works there.
struct Buffers {
  const char *input = nullptr;
  char *output = nullptr;
};

// One rank's arguments, with NCCL's in-place conventions: sendbuf == recvbuf, or for
// allgather sendbuf == recvbuf + rank * count, for reduce-scatter recvbuf == sendbuf +
// rank * count (elements).
struct Call {
  Collective collective = Collective::kAllreduce;
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0;
  cohort_dtype_t dtype = COHORT_FLOAT32;
  cohort_op_t op = COHORT_SUM;
  int root = 0;
  int rank = 0;
  int ranks = 1;
  bool in_place = false;
};

struct CallArgs {
  Collective collective = Collective::kAllreduce;
  Shape shape;
  cohort_dtype_t dtype = COHORT_FLOAT32;
  cohort_op_t op = COHORT_SUM;
  int root = 0;
  int rank = 0;
  int ranks = 1;
  bool in_place = false;
};
Call make_call(const CallArgs &args, const Buffers &buffers);

// The copy that stages an in-place call's input: from buffers.input to where the call reads
// it, all of it (reduce-scatter and alltoall: ranks blocks), this rank's block of allgather's
// output, and for broadcast only on the root.  Out of place (and for the barrier, and a
// broadcast's other ranks) no copy: bytes 0.
struct StageCopy {
  void *dst = nullptr;
  const void *src = nullptr;
  size_t bytes = 0;
};
StageCopy in_place_copy(const Call &call, const Shape &shape, const Buffers &buffers);

// Where this rank's result lies: `count` elements from `data` (none on a reduce's non-root
// ranks and for the barrier).
struct Region {
  char *data = nullptr;
  size_t count = 0;
};
Region output_region(const Call &call);

cohort_status_t run_cohort(cohort_team_t team, const Call &call);
// The stream-ordered form (cohort_*_stream): enqueues the call on `stream` and returns.
cohort_status_t run_cohort_stream(cohort_team_t team, const Call &call, void *stream);

// nullptr when MPI can make the same call, else why not, for the table ("n/a"): fp16 and
// bf16 have no MPI type to reduce, and MPI has no average.
const char *mpi_unavailable(const Call &call);
// The matching MPI call on the same buffers (MPI_IN_PLACE in place); MPI_SUCCESS or its error.
int run_mpi(MPI_Comm comm, const Call &call);

}  // namespace cohort::perf
