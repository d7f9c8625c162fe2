#include "perf_nccl.h"

#include "core/build_info.h"
#include "coll/dtype.h"
#include "perf_job.h"

#if COHORT_HAVE_CUDA && __has_include(<nccl.h>)
#define COHORT_PERF_NCCL 1
#include <dlfcn.h>
#include <nccl.h>  // types and prototypes only: every function comes from dlsym
#else
#define COHORT_PERF_NCCL 0
#endif

namespace cohort::perf {

std::unique_ptr<Nccl> load_nccl_for_job(MPI_Comm comm, int ranks_per_gpu, std::string *why) {
  if (ranks_per_gpu > 1) {
    *why = "NCCL refuses two ranks on one GPU, and " + std::to_string(ranks_per_gpu) +
           " ranks share a GPU here (run one rank per GPU to compare)";
    return nullptr;
  }
  std::string mine;
  std::unique_ptr<Nccl> nccl = Nccl::load(&mine);
  *why = first_error(comm, mine);
  if (!why->empty()) return nullptr;
  return nccl;
}

#if COHORT_PERF_NCCL

struct Nccl::Api {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) get_error_string = nullptr;
};

namespace {

constexpr const char *kLibrary = "libnccl.so.2";

template <class F>
bool find(void *library, const char *name, F *out, std::string *why) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  if (*out == nullptr) *why = std::string(kLibrary) + " has no " + name;
  return *out != nullptr;
}

ncclDataType_t nccl_type(cohort_dtype_t dtype) {
  switch (dtype) {
    case COHORT_INT8: return ncclInt8;
    case COHORT_UINT8: return ncclUint8;
    case COHORT_INT32: return ncclInt32;
    case COHORT_UINT32: return ncclUint32;
    case COHORT_INT64: return ncclInt64;
    case COHORT_UINT64: return ncclUint64;
    case COHORT_FLOAT16: return ncclFloat16;
    case COHORT_BFLOAT16: return ncclBfloat16;
    case COHORT_FLOAT64: return ncclFloat64;
    default: return ncclFloat32;
  }
}

ncclRedOp_t nccl_op(cohort_op_t op) {
  switch (op) {
    case COHORT_PROD: return ncclProd;
    case COHORT_MIN: return ncclMin;
    case COHORT_MAX: return ncclMax;
    case COHORT_AVG: return ncclAvg;
    default: return ncclSum;
  }
}

}  // namespace

std::unique_ptr<Nccl> Nccl::load(std::string *why) {
  void *library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    *why = std::string(kLibrary) + " not found: " + dlerror();
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  if (!find(library, "ncclGetVersion", &api->get_version, why) ||
      !find(library, "ncclGetUniqueId", &api->get_unique_id, why) ||
      !find(library, "ncclCommInitRank", &api->comm_init_rank, why) ||
      !find(library, "ncclCommDestroy", &api->comm_destroy, why) ||
      !find(library, "ncclAllReduce", &api->all_reduce, why) ||
      !find(library, "ncclReduce", &api->reduce, why) ||
      !find(library, "ncclBroadcast", &api->broadcast, why) ||
      !find(library, "ncclAllGather", &api->all_gather, why) ||
      !find(library, "ncclReduceScatter", &api->reduce_scatter, why) ||
      !find(library, "ncclSend", &api->send, why) || !find(library, "ncclRecv", &api->recv, why) ||
      !find(library, "ncclGroupStart", &api->group_start, why) ||
      !find(library, "ncclGroupEnd", &api->group_end, why) ||
      !find(library, "ncclGetErrorString", &api->get_error_string, why)) {
    return nullptr;
  }
  return std::unique_ptr<Nccl>(new Nccl(std::move(api)));
}

Nccl::Nccl(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nccl::~Nccl() { destroy(); }

std::string Nccl::version() const {
  int code = 0;
  if (api_->get_version(&code) != ncclSuccess) return "?";
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string Nccl::init(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ncclUniqueId id = {};
  ncclResult_t r = rank == 0 ? api_->get_unique_id(&id) : ncclSuccess;
  MPI_Bcast(&r, sizeof r, MPI_BYTE, 0, comm);
  if (r != ncclSuccess) return std::string("ncclGetUniqueId: ") + api_->get_error_string(r);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclComm_t nccl_comm = nullptr;
  r = api_->comm_init_rank(&nccl_comm, size, id, rank);
  if (r != ncclSuccess) return std::string("ncclCommInitRank: ") + api_->get_error_string(r);
  comm_ = nccl_comm;
  return "";
}

std::string Nccl::destroy() {
  if (comm_ == nullptr) return "";
  const ncclResult_t r = api_->comm_destroy(static_cast<ncclComm_t>(comm_));
  comm_ = nullptr;
  return r == ncclSuccess ? "" : std::string("ncclCommDestroy: ") + api_->get_error_string(r);
}

namespace {

// "" or "NAME: NCCL's error string".
std::string said(const char *name, ncclResult_t r, decltype(&ncclGetErrorString) error_string) {
  return r == ncclSuccess ? "" : std::string(name) + ": " + error_string(r);
}

}  // namespace

std::string Nccl::alltoall(const Call &c, void *stream) {
  const Api &a = *api_;
  auto comm = static_cast<ncclComm_t>(comm_);
  auto s = static_cast<cudaStream_t>(stream);
  const ncclDataType_t type = nccl_type(c.dtype);
  const size_t block = c.count * coll::dtype_size(c.dtype);
  ncclResult_t r = a.group_start();
  if (r != ncclSuccess) return said("ncclGroupStart", r, a.get_error_string);
  for (int peer = 0; peer < c.ranks && r == ncclSuccess; ++peer) {
    r = a.send(static_cast<const char *>(c.send) + peer * block, c.count, type, peer, comm, s);
    if (r == ncclSuccess)
      r = a.recv(static_cast<char *>(c.recv) + peer * block, c.count, type, peer, comm, s);
  }
  const ncclResult_t end = a.group_end();  // always: a group left open breaks every later call
  if (r != ncclSuccess) return said("ncclSend/ncclRecv", r, a.get_error_string);
  return said("ncclGroupEnd", end, a.get_error_string);
}

const char *Nccl::unavailable(Collective c) {
  return c == Collective::kBarrier ? "NCCL has no barrier" : nullptr;
}

std::string Nccl::run(const Call &c, void *stream) {
  const Api &a = *api_;
  auto comm = static_cast<ncclComm_t>(comm_);
  auto s = static_cast<cudaStream_t>(stream);
  const ncclDataType_t type = nccl_type(c.dtype);
  const ncclRedOp_t op = nccl_op(c.op);
  switch (c.collective) {
    case Collective::kAllreduce:
      return said("ncclAllReduce", a.all_reduce(c.send, c.recv, c.count, type, op, comm, s),
                  a.get_error_string);
    case Collective::kReduce:
      return said("ncclReduce", a.reduce(c.send, c.recv, c.count, type, op, c.root, comm, s),
                  a.get_error_string);
    case Collective::kBroadcast:
      return said("ncclBroadcast", a.broadcast(c.send, c.recv, c.count, type, c.root, comm, s),
                  a.get_error_string);
    case Collective::kAllgather:
      return said("ncclAllGather", a.all_gather(c.send, c.recv, c.count, type, comm, s),
                  a.get_error_string);
    case Collective::kReduceScatter:
      return said("ncclReduceScatter", a.reduce_scatter(c.send, c.recv, c.count, type, op, comm, s),
                  a.get_error_string);
    case Collective::kAlltoall: return alltoall(c, stream);
    default: return std::string("NCCL has no ") + coll::collective_name(c.collective);
  }
}

#else  // no CUDA, or no nccl.h to build against

struct Nccl::Api {};

std::unique_ptr<Nccl> Nccl::load(std::string *why) {
  *why = COHORT_HAVE_CUDA ? "this cohort_perf was built without nccl.h"
                          : "this Cohort was built without CUDA";
  return nullptr;
}

Nccl::Nccl(std::unique_ptr<Api> api) : api_(std::move(api)) {}
Nccl::~Nccl() = default;
std::string Nccl::version() const { return "?"; }
std::string Nccl::init(MPI_Comm) { return "no NCCL"; }
std::string Nccl::destroy() { return ""; }
const char *Nccl::unavailable(Collective) { return "no NCCL"; }
std::string Nccl::run(const Call &, void *) { return "no NCCL"; }
std::string Nccl::alltoall(const Call &, void *) { return "no NCCL"; }

#endif

}  // namespace cohort::perf
