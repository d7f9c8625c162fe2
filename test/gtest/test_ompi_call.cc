// Which of an MPI call's arguments a rank uses (call.h), without MPI running: what the standard
// tells a rank to ignore is never read, so MPI_DATATYPE_NULL, -1 or NULL there cannot make MPI
// raise an error; and how a side with gaps is laid out once packed (packing.h).
#include <gtest/gtest.h>

#include <vector>

#include "ompi/call.h"
#include "ompi/packing.h"

namespace cohort::ompi {
namespace {

// A call of `kind` on rank `rank` of 4, rooted at 1, with MPI_IN_PLACE where `in_place` says.
Call call_of(coll_cohort_kind_t kind, int rank, bool in_place) {
  coll_cohort_args_t a{};
  a.kind = kind;
  a.root = 1;
  static char send[8], recv[8];
  a.sbuf = send;
  a.rbuf = recv;
  const bool scatters = kind == COLL_COHORT_SCATTER || kind == COLL_COHORT_SCATTERV;
  if (in_place && scatters) a.rbuf = MPI_IN_PLACE;
  if (in_place && !scatters) a.sbuf = MPI_IN_PLACE;
  return Call{a, false, rank, 4};
}

struct Uses {
  bool send, recv;
  bool operator==(const Uses &o) const { return send == o.send && recv == o.recv; }
};
Uses uses(coll_cohort_kind_t kind, int rank, bool in_place) {
  const Call c = call_of(kind, rank, in_place);
  return {c.uses(Side::kSend), c.uses(Side::kRecv)};
}

TEST(OmpiCall, InPlaceTheSendSideIsNotUsed) {
  for (auto kind : {COLL_COHORT_ALLREDUCE, COLL_COHORT_ALLGATHER, COLL_COHORT_ALLGATHERV,
                    COLL_COHORT_ALLTOALL, COLL_COHORT_ALLTOALLV, COLL_COHORT_REDUCE_SCATTER,
                    COLL_COHORT_REDUCE_SCATTER_BLOCK, COLL_COHORT_SCAN, COLL_COHORT_EXSCAN}) {
    EXPECT_EQ(uses(kind, 0, true), (Uses{false, true})) << kind;
    EXPECT_EQ(uses(kind, 0, false), (Uses{true, true})) << kind;
  }
}

TEST(OmpiCall, TheRootAloneUsesTheGatheredSide) {
  for (auto kind : {COLL_COHORT_REDUCE, COLL_COHORT_GATHER, COLL_COHORT_GATHERV}) {
    EXPECT_EQ(uses(kind, 0, false), (Uses{true, false})) << kind;  // off the root
    EXPECT_EQ(uses(kind, 1, false), (Uses{true, true})) << kind;
    EXPECT_EQ(uses(kind, 1, true), (Uses{false, true})) << kind;  // in place at the root
  }
}

TEST(OmpiCall, TheRootAloneUsesTheScatteredSide) {
  for (auto kind : {COLL_COHORT_SCATTER, COLL_COHORT_SCATTERV}) {
    EXPECT_EQ(uses(kind, 0, false), (Uses{false, true})) << kind;  // off the root
    EXPECT_EQ(uses(kind, 1, false), (Uses{true, true})) << kind;
    EXPECT_EQ(uses(kind, 1, true), (Uses{true, false})) << kind;  // in place: recvbuf unused
  }
}

TEST(OmpiCall, BcastUsesItsOneBufferAndABarrierNone) {
  EXPECT_EQ(uses(COLL_COHORT_BCAST, 0, false), (Uses{false, true}));
  EXPECT_EQ(uses(COLL_COHORT_BCAST, 1, false), (Uses{false, true}));
  EXPECT_EQ(uses(COLL_COHORT_BARRIER, 1, false), (Uses{false, false}));
}

// Off the root a gather passes junk for its receive side (MPICH's tests pass NULL, -1 and
// MPI_DATATYPE_NULL there), in place the send side: the call's buffers are found without
// asking MPI about those types (which Open MPI answers with MPI_ERR_TYPE, fatal by default).
TEST(OmpiCall, BuffersOfACallWithJunkInItsIgnoredArgumentsNeedNoMpi) {
  for (int rank : {0, 1}) {
    coll_cohort_args_t a{};
    a.kind = COLL_COHORT_GATHER;
    a.root = 1;
    a.sbuf = rank == 1 ? MPI_IN_PLACE : nullptr;  // in place at the root, nothing to send
    a.scount = rank == 1 ? -1 : 0;
    a.sdtype = MPI_DATATYPE_NULL;
    a.rbuf = nullptr;
    a.rcount = rank == 1 ? 0 : -1;  // the root gathers nothing; the others pass junk
    a.rdtype = MPI_DATATYPE_NULL;
    const Call c{a, false, rank, 4};
    CallBuffers buffers;
    ASSERT_TRUE(c.buffers(&buffers)) << rank;
    EXPECT_EQ(buffers.count, 0) << rank;
  }
}

TEST(OmpiPacking, BlocksFollowEachOtherOncePacked) {
  MpiBlocks blocks;
  blocks.layout.size = 8;
  blocks.counts = {3, 0, 5, 1};
  blocks.displs = {40, 0, -7, 2};  // any order, negative too: packing follows the list
  EXPECT_EQ(blocks.total_bytes(), 72u);
  EXPECT_EQ(blocks.packed_offsets(), (std::vector<size_t>{0, 24, 24, 64}));
  EXPECT_EQ(blocks.block_bytes(2), 40u);
}

TEST(OmpiPacking, LayoutsWithGapsAreNotContiguous) {
  TypeLayout plain{4, 4, 0, 4};
  EXPECT_TRUE(plain.contiguous());
  TypeLayout gapped{4, 8, 0, 4};  // one int, then a gap of one (MPI_Type_create_resized)
  EXPECT_FALSE(gapped.contiguous());
  TypeLayout shifted{4, 4, 4, 4};  // its data starts past the element's address
  EXPECT_FALSE(shifted.contiguous());
  TypeLayout holes{8, 12, 0, 12};  // two ints around a hole
  EXPECT_FALSE(holes.contiguous());
}

}  // namespace
}  // namespace cohort::ompi
