// The C API's v-variants: each a CollCall with the caller's arrays, run or posted as the other
// collectives (api.cc).  The checks copy the arrays, so a posted call does not keep them.
#include "team/api_calls.h"

namespace {

using cohort::CollCall;
using cohort::VArrays;
using cohort::coll::Collective;

CollCall vcall(Collective collective, const void *src, void *dst, size_t count,
               cohort_dtype_t dtype, cohort_op_t op, int root, VArrays arrays) {
  return CollCall{{collective, src, dst, count, dtype, op, root}, arrays};
}

CollCall allgatherv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                    const size_t *displs, cohort_dtype_t dtype) {
  return vcall(Collective::kAllgatherv, sendbuf, recvbuf, 0, dtype, COHORT_SUM, 0,
               {nullptr, nullptr, recvcounts, displs});
}

CollCall alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                   void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                   cohort_dtype_t dtype) {
  return vcall(Collective::kAlltoallv, sendbuf, recvbuf, 0, dtype, COHORT_SUM, 0,
               {sendcounts, sdispls, recvcounts, rdispls});
}

CollCall gatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                 const size_t *displs, cohort_dtype_t dtype, int root) {
  return vcall(Collective::kGatherv, sendbuf, recvbuf, sendcount, dtype, COHORT_SUM, root,
               {nullptr, nullptr, recvcounts, displs});
}

CollCall scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                  void *recvbuf, size_t recvcount, cohort_dtype_t dtype, int root) {
  return vcall(Collective::kScatterv, sendbuf, recvbuf, recvcount, dtype, COHORT_SUM, root,
               {sendcounts, displs, nullptr, nullptr});
}

CollCall reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                         cohort_dtype_t dtype, cohort_op_t op) {
  return vcall(Collective::kReduceScatterv, sendbuf, recvbuf, 0, dtype, op, 0,
               {nullptr, nullptr, recvcounts, nullptr});
}

}  // namespace

cohort_status_t cohort_allgatherv(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                  const size_t *recvcounts, const size_t *displs,
                                  cohort_dtype_t dtype) {
  return cohort::run_collective("cohort_allgatherv", team,
                                allgatherv(sendbuf, recvbuf, recvcounts, displs, dtype));
}

cohort_status_t cohort_alltoallv(cohort_team_t team, const void *sendbuf, const size_t *sendcounts,
                                 const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                 const size_t *rdispls, cohort_dtype_t dtype) {
  return cohort::run_collective(
      "cohort_alltoallv", team,
      alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype));
}

cohort_status_t cohort_gatherv(cohort_team_t team, const void *sendbuf, size_t sendcount,
                               void *recvbuf, const size_t *recvcounts, const size_t *displs,
                               cohort_dtype_t dtype, int root) {
  return cohort::run_collective(
      "cohort_gatherv", team,
      gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root));
}

cohort_status_t cohort_scatterv(cohort_team_t team, const void *sendbuf, const size_t *sendcounts,
                                const size_t *displs, void *recvbuf, size_t recvcount,
                                cohort_dtype_t dtype, int root) {
  return cohort::run_collective(
      "cohort_scatterv", team,
      scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root));
}

cohort_status_t cohort_reduce_scatterv(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, cohort_dtype_t dtype,
                                       cohort_op_t op) {
  return cohort::run_collective("cohort_reduce_scatterv", team,
                                reduce_scatterv(sendbuf, recvbuf, recvcounts, dtype, op));
}

cohort_status_t cohort_allgatherv_post(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       cohort_dtype_t dtype, cohort_request_t *request) {
  return cohort::post_collective("cohort_allgatherv_post", team,
                                 allgatherv(sendbuf, recvbuf, recvcounts, displs, dtype), request);
}

cohort_status_t cohort_alltoallv_post(cohort_team_t team, const void *sendbuf,
                                      const size_t *sendcounts, const size_t *sdispls,
                                      void *recvbuf, const size_t *recvcounts,
                                      const size_t *rdispls, cohort_dtype_t dtype,
                                      cohort_request_t *request) {
  return cohort::post_collective(
      "cohort_alltoallv_post", team,
      alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype), request);
}

cohort_status_t cohort_gatherv_post(cohort_team_t team, const void *sendbuf, size_t sendcount,
                                    void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                    cohort_dtype_t dtype, int root, cohort_request_t *request) {
  return cohort::post_collective(
      "cohort_gatherv_post", team,
      gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root), request);
}

cohort_status_t cohort_scatterv_post(cohort_team_t team, const void *sendbuf,
                                     const size_t *sendcounts, const size_t *displs, void *recvbuf,
                                     size_t recvcount, cohort_dtype_t dtype, int root,
                                     cohort_request_t *request) {
  return cohort::post_collective(
      "cohort_scatterv_post", team,
      scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root), request);
}

cohort_status_t cohort_reduce_scatterv_post(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                            const size_t *recvcounts, cohort_dtype_t dtype,
                                            cohort_op_t op, cohort_request_t *request) {
  return cohort::post_collective("cohort_reduce_scatterv_post", team,
                                 reduce_scatterv(sendbuf, recvbuf, recvcounts, dtype, op), request);
}
