// The v-variants' refusals, alike on every rank before any traffic: each a named
// COHORT_ERR_INVALID_ARG, nothing written, no request made; and the NULLs they do take.
// Refusals that only the root can see (its own arrays) are checked on a team of one, where
// no other rank is left waiting.
#include <vector>

#include "host_colls.h"

namespace mpi_test {
namespace {

void check_refused(cohort_status_t s, const char *part) {
  CHECK(s == COHORT_ERR_INVALID_ARG, "expected COHORT_ERR_INVALID_ARG (%s), got %s: %s", part,
        cohort_status_string(s), cohort_last_error());
  CHECK(contains(cohort_last_error(), part), "message '%s' does not say '%s'", cohort_last_error(),
        part);
}

// Arrays and sizes every rank passes alike.
void check_shared_refusals(cohort_team_t team) {
  const int n = g_size;
  std::vector<size_t> ones(n, 1), displs(n), huge(n, size_t{1} << 60);
  for (int q = 0; q < n; ++q) displs[q] = q;
  std::vector<int32_t> in(n, 7), out(n, -1);
  check_refused(
      cohort_allgatherv(team, in.data(), out.data(), nullptr, displs.data(), COHORT_INT32),
      "allgatherv: recvcounts is NULL");
  check_refused(cohort_allgatherv(team, in.data(), out.data(), ones.data(), nullptr, COHORT_INT32),
                "allgatherv: displs is NULL");
  check_refused(
      cohort_allgatherv(team, nullptr, out.data(), ones.data(), displs.data(), COHORT_INT32),
      "allgatherv: sendbuf is NULL with 1 elements");
  std::vector<size_t> far = displs;
  far[n - 1] = SIZE_MAX - 1;
  check_refused(
      cohort_allgatherv(team, in.data(), out.data(), ones.data(), far.data(), COHORT_INT32),
      "ends past any buffer: displs[");
  check_refused(
      cohort_reduce_scatterv(team, in.data(), out.data(), huge.data(), COHORT_INT32, COHORT_SUM),
      "reduce_scatterv: recvcounts[0..");
  check_refused(cohort_reduce_scatterv(team, in.data(), out.data(), ones.data(), COHORT_INT32,
                                       static_cast<cohort_op_t>(42)),
                "reduce_scatterv");
  check_refused(cohort_alltoallv(team, in.data(), nullptr, displs.data(), out.data(), ones.data(),
                                 displs.data(), COHORT_INT32),
                "alltoallv: sendcounts is NULL");
  std::vector<size_t> two = ones;
  two[g_rank] = 2;  // this rank's block to itself: 2 out, 1 in
  check_refused(cohort_alltoallv(team, in.data(), two.data(), displs.data(), out.data(),
                                 ones.data(), displs.data(), COHORT_INT32),
                "block to itself has two sizes: sendcounts[rank]=2 but recvcounts");
  check_refused(
      cohort_gatherv(team, in.data(), 1, out.data(), ones.data(), displs.data(), COHORT_INT32, n),
      "gatherv: root=");
  cohort_request_t request = nullptr;
  check_refused(cohort_scatterv_post(team, in.data(), ones.data(), displs.data(), out.data(), 1,
                                     COHORT_INT32, -1, &request),
                "scatterv: root=-1");
  CHECK(request == nullptr, "a refused post set its request");
  check_refused(cohort_allgatherv_post(team, in.data(), out.data(), ones.data(), nullptr,
                                       COHORT_INT32, &request),
                "allgatherv: displs is NULL");
  CHECK(request == nullptr, "a refused post set its request");
  CHECK(std::count(out.begin(), out.end(), -1) == n, "a refused call wrote");
}

// The root's own arrays, on a team of one.
void check_root_refusals(cohort_team_t team) {
  size_t one = 1, zero = 0;
  int32_t in = 7, out = -1;
  check_refused(cohort_gatherv(team, &in, 1, &out, nullptr, &zero, COHORT_INT32, 0),
                "gatherv: recvcounts is NULL");
  check_refused(cohort_gatherv(team, &in, 2, &out, &one, &zero, COHORT_INT32, 0),
                "gatherv: rank 0's block to itself has two sizes: sendcount=2 but recvcounts[0]=1");
  check_refused(cohort_scatterv(team, &in, &one, nullptr, &out, 1, COHORT_INT32, 0),
                "scatterv: displs is NULL");
  check_refused(cohort_scatterv(team, &in, &one, &zero, &out, 3, COHORT_INT32, 0),
                "recvcount=3 but sendcounts[0]=1");
  CHECK(out == -1, "a refused call wrote");
}

// NULL where nothing moves, and the arrays only the root reads.
void check_accepted_nulls(cohort_team_t team) {
  const int n = g_size;
  std::vector<size_t> zeros(n, 0);
  CHECK_STATUS(cohort_allgatherv(team, nullptr, nullptr, zeros.data(), zeros.data(), COHORT_INT32),
               COHORT_SUCCESS);
  CHECK_STATUS(
      cohort_reduce_scatterv(team, nullptr, nullptr, zeros.data(), COHORT_FLOAT32, COHORT_AVG),
      COHORT_SUCCESS);
  CHECK_STATUS(cohort_alltoallv(team, nullptr, zeros.data(), zeros.data(), nullptr, zeros.data(),
                                zeros.data(), COHORT_INT8),
               COHORT_SUCCESS);
  int32_t x = g_rank;
  std::vector<int32_t> all(n, -1);
  std::vector<size_t> ones(n, 1), displs(n);
  for (int q = 0; q < n; ++q) displs[q] = n - 1 - q;  // reversed
  const bool root = g_rank == n - 1;
  CHECK_STATUS(
      cohort_gatherv(team, &x, 1, root ? all.data() : nullptr, root ? ones.data() : nullptr,
                     root ? displs.data() : nullptr, COHORT_INT32, n - 1),
      COHORT_SUCCESS);
  for (int q = 0; q < n && root; ++q)
    CHECK(all[n - 1 - q] == q, "gatherv put %d at %d", all[n - 1 - q], n - 1 - q);
}

}  // namespace

void scenario_verrors() {
  FakeHosts hosts;
  cohort::Team team(MPI_COMM_WORLD);
  check_shared_refusals(team.get());
  if (g_size == 1) check_root_refusals(team.get());
  check_accepted_nulls(team.get());
}

}  // namespace mpi_test
