// One MPI collective call as the logic sees it: the glue's arguments, this rank's place in the
// communicator, which of its arguments this rank uses, and what each buffer holds (its byte
// range, whether the call reads or writes it) for the memory rule and for staging.  Arguments
// the standard tells a rank to ignore (the send side with MPI_IN_PLACE, a gather's receive
// side and a scatter's send side off the root, reduce's receive buffer off the root) may be
// anything, MPI_DATATYPE_NULL, a negative count or NULL arrays among them: nothing here or
// after reads them.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "coll_cohort.h"

namespace cohort::ompi {

using Kind = coll_cohort_kind_t;

// Bytes a buffer spans for the call: [begin, begin + bytes).
struct Region {
  const char *begin = nullptr;
  size_t bytes = 0;
};

// One buffer the call uses on this rank.
enum class Side { kSend, kRecv };
struct BufferUse {
  Side side = Side::kSend;
  Region region;         // what the call may touch from it (empty: nothing)
  bool written = false;  // the call writes it (else it only reads it)
};

// A call's buffers on one rank: at most a send and a receive side.
struct CallBuffers {
  BufferUse use[2];
  int count = 0;
  const BufferUse *begin() const { return use; }
  const BufferUse *end() const { return use + count; }
};

struct Call {
  coll_cohort_args_t args;
  bool nonblocking = false;
  int rank = 0;
  int size = 1;

  Kind kind() const { return args.kind; }
  bool is_root() const { return rank == args.root; }
  // MPI_IN_PLACE on this rank (at the root only, for the rooted collectives).
  bool in_place() const;
  // Whether the collective reduces (its datatype and op must be Cohort's).
  bool reduces() const;
  // Whether this rank uses a side's arguments (buffer, count or counts, datatype).  A barrier
  // uses none; bcast's one buffer is the receive side.
  bool uses(Side side) const;
  // The buffers this rank uses and moves bytes through (none for a barrier, a count of 0,
  // reduce's receive buffer off the root, ...).  False when MPI cannot tell the extent of a
  // datatype the call uses (which MPI's own argument checks rule out).
  bool buffers(CallBuffers *out) const;
};

}  // namespace cohort::ompi
