#include "perf_nccl.h"

#include "core/build_info.h"
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

std::string Nccl::allreduce(const Call &c, void *stream) {
  const ncclResult_t r =
      api_->all_reduce(c.send, c.recv, c.count, nccl_type(c.dtype), nccl_op(c.op),
                       static_cast<ncclComm_t>(comm_), static_cast<cudaStream_t>(stream));
  return r == ncclSuccess ? "" : std::string("ncclAllReduce: ") + api_->get_error_string(r);
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
std::string Nccl::allreduce(const Call &, void *) { return "no NCCL"; }

#endif

}  // namespace cohort::perf
