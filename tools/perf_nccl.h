// cohort_perf --vs-nccl: NCCL as the reference for the GPU collectives (allreduce, reduce,
// broadcast, allgather, reduce-scatter, alltoall; not the barrier, which NCCL has not) and for
// team creation, loaded at run time (dlopen "libnccl.so.2": no link-time dependency; a missing
// library is said, and the run goes on without).  NCCL refuses two ranks on one GPU, so it runs
// only where every rank has a GPU of its own (one rank on a machine of one GPU).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "perf_coll.h"

namespace cohort::perf {

class Nccl {
 public:
  // Loads the library and the functions used: nullptr with *why when it cannot.
  static std::unique_ptr<Nccl> load(std::string *why);
  ~Nccl();  // destroys the communicator; the library stays loaded (NCCL keeps threads)
  Nccl(const Nccl &) = delete;
  Nccl &operator=(const Nccl &) = delete;

  std::string version() const;  // "2.28.3"
  // Collective over comm: ncclGetUniqueId on rank 0, MPI_Bcast, ncclCommInitRank on every
  // rank (the current CUDA device).  "" or the error.
  std::string init(MPI_Comm comm);
  std::string destroy();
  // nullptr when NCCL makes the same call, else why not (the barrier: NCCL has none).
  static const char *unavailable(Collective c);
  // NCCL's call on the call's buffers, count, type, op and root, on `stream`, with the same
  // in-place conventions (perf_coll.h); alltoall is ncclSend + ncclRecv to every rank in one
  // group, as nccl-tests and PyTorch's all_to_all make it.  "" or the error.
  std::string run(const Call &call, void *stream);

 private:
  struct Api;  // the loaded functions
  explicit Nccl(std::unique_ptr<Api> api);
  std::string alltoall(const Call &call, void *stream);
  std::unique_ptr<Api> api_;
  void *comm_ = nullptr;  // ncclComm_t
};

// Collective over comm: NCCL loaded on every rank, or nullptr on every rank with *why (it
// refuses two ranks on one GPU, the library is missing, ...).  No communicator yet: init().
std::unique_ptr<Nccl> load_nccl_for_job(MPI_Comm comm, int ranks_per_gpu, std::string *why);

}  // namespace cohort::perf
