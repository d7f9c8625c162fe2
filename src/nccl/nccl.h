/*
 * Cohort: NCCL-compatible public API (libnccl.so.2 shim).
 *
 * Binary-compatible with the public nccl.h shipped with NVIDIA NCCL 2.28.9
 * (github.com/NVIDIA/nccl, tag v2.28.9-1, src/nccl.h.in). Programs built
 * against NVIDIA's header call into Cohort through these declarations, so
 * every enum value, struct layout and function signature below must stay
 * identical to that release. Written independently for Cohort.
 */
#ifndef NCCL_H_ /* same guard as NVIDIA's header so the two never both apply */
#define NCCL_H_

#include <stddef.h>
#include <limits.h>
#include <cuda_runtime.h>
/* NVIDIA's header pulls these in too; user code may rely on that. */
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif

/* ---------------------------------------------------------------------- */
/* Version                                                                 */
/* ---------------------------------------------------------------------- */

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

/* Releases up to 2.8 used X*1000+Y*100+Z; later ones use X*10000+Y*100+Z. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) \
                          : (X) * 10000 + (Y) * 100 + (Z))

#define NCCL_VERSION_CODE 22809 /* == NCCL_VERSION(2, 28, 9) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Handles and identifiers                                                 */
/* ---------------------------------------------------------------------- */

/* Opaque; callers only ever hold pointers. Tag names match NCCL's. */
typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;

#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/* Passed by value to ncclCommInitRank*: must be exactly 128 bytes of char. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---------------------------------------------------------------------- */
/* Result codes (values fixed by NCCL 2.28.9; ncclTimeout came later)      */
/* ---------------------------------------------------------------------- */

typedef enum {
  ncclSuccess            = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError        = 2,
  ncclInternalError      = 3,
  ncclInvalidArgument    = 4,
  ncclInvalidUsage       = 5,
  ncclRemoteError        = 6,
  ncclInProgress         = 7,
  ncclNumResults         = 8
} ncclResult_t;

/* ---------------------------------------------------------------------- */
/* Misc. constants and flags                                               */
/* ---------------------------------------------------------------------- */

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR    -1
#define NCCL_UNDEF_FLOAT      -1.0f

/* winFlags for ncclCommWindowRegister */
#define NCCL_WIN_DEFAULT            0x00
#define NCCL_WIN_COLL_SYMMETRIC     0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy */
#define NCCL_CTA_POLICY_DEFAULT    0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO       0x02

/* shrinkFlags for ncclCommShrink */
#define NCCL_SHRINK_DEFAULT 0x00 /* plain shrink of the parent */
#define NCCL_SHRINK_ABORT   0x01 /* abort parent's pending work, then shrink */

/* revokeFlags for ncclCommRevoke (only 0 is valid) */
#define NCCL_REVOKE_DEFAULT 0x00

/* ---------------------------------------------------------------------- */
/* Communicator configuration                                              */
/* ---------------------------------------------------------------------- */

/* Field order and types must match NCCL 2.28.9 (struct ncclConfig_v22800).
 * LP64 layout: 80 bytes; the leading size/magic/version identify the
 * caller's header revision and must be checked before reading later fields. */
typedef struct ncclConfig_v22800 {
  size_t       size;               /* sizeof(ncclConfig_t) as the caller saw it */
  unsigned int magic;              /* 0xcafebeef */
  unsigned int version;            /* NCCL_VERSION code of the caller's header */
  int          blocking;
  int          cgaClusterSize;
  int          minCTAs;
  int          maxCTAs;
  const char*  netName;
  int          splitShare;
  int          trafficClass;
  const char*  commName;
  int          collnetEnable;
  int          CTAPolicy;
  int          shrinkShare;
  int          nvlsCTAs;
  int          nChannelsPerNetPeer;
  int          nvlinkCentricSched;
} ncclConfig_t;

/* Every user-visible field starts "undefined" so the library picks. */
#define NCCL_CONFIG_INITIALIZER {                          \
  sizeof(ncclConfig_t),                                    \
  0xcafebeef,                                              \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),        \
  NCCL_CONFIG_UNDEF_INT, /* blocking */                    \
  NCCL_CONFIG_UNDEF_INT, /* cgaClusterSize */              \
  NCCL_CONFIG_UNDEF_INT, /* minCTAs */                     \
  NCCL_CONFIG_UNDEF_INT, /* maxCTAs */                     \
  NCCL_CONFIG_UNDEF_PTR, /* netName */                     \
  NCCL_CONFIG_UNDEF_INT, /* splitShare */                  \
  NCCL_CONFIG_UNDEF_INT, /* trafficClass */                \
  NCCL_CONFIG_UNDEF_PTR, /* commName */                    \
  NCCL_CONFIG_UNDEF_INT, /* collnetEnable */               \
  NCCL_CONFIG_UNDEF_INT, /* CTAPolicy */                   \
  NCCL_CONFIG_UNDEF_INT, /* shrinkShare */                 \
  NCCL_CONFIG_UNDEF_INT, /* nvlsCTAs */                    \
  NCCL_CONFIG_UNDEF_INT, /* nChannelsPerNetPeer */         \
  NCCL_CONFIG_UNDEF_INT, /* nvlinkCentricSched */          \
}

/* Output of ncclGroupSimulateEnd. Layout must match ncclSimInfo_v22200. */
typedef struct ncclSimInfo_v22200 {
  size_t       size;
  unsigned int magic;              /* 0x74685283 */
  unsigned int version;
  float        estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER {                        \
  sizeof(ncclSimInfo_t),                                   \
  0x74685283,                                              \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),        \
  NCCL_UNDEF_FLOAT                                         \
}

/* ---------------------------------------------------------------------- */
/* Reduction operators and data types                                      */
/* ---------------------------------------------------------------------- */

/* Values >= ncclNumOps are handles returned by ncclRedOpCreatePreMulSum.
 * ncclMaxRedOp is the largest positive value of a 4-byte enum; NCCL keeps
 * sizeof(ncclRedOp_t) == sizeof(int) for ABI stability (checked below). */
typedef enum {
  ncclSum      = 0,
  ncclProd     = 1,
  ncclMax      = 2,
  ncclMin      = 3,
  ncclAvg      = 4,
  ncclNumOps   = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

/* Aliases share a value with the preceding canonical name. */
typedef enum {
  ncclInt8       = 0,  ncclChar   = 0,
  ncclUint8      = 1,
  ncclInt32      = 2,  ncclInt    = 2,
  ncclUint32     = 3,
  ncclInt64      = 4,
  ncclUint64     = 5,
  ncclFloat16    = 6,  ncclHalf   = 6,
  ncclFloat32    = 7,  ncclFloat  = 7,
  ncclFloat64    = 8,  ncclDouble = 8,
  ncclBfloat16   = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes   = 12
} ncclDataType_t;

/* Where the scalar given to ncclRedOpCreatePreMulSum lives. */
typedef enum {
  ncclScalarDevice        = 0, /* device memory, read while the op runs */
  ncclScalarHostImmediate = 1  /* host memory, read before the call returns */
} ncclScalarResidence_t;

/* ---------------------------------------------------------------------- */
/* Device-communicator types (NCCL declares these in nccl_device/core.h)   */
/* ---------------------------------------------------------------------- */

/* Left incomplete on purpose: ncclDevCommCreate/Destroy only take pointers.
 * Note the caller owns the ncclDevComm storage; with NVIDIA's 2.28.9
 * headers (CUDA 13.0 build) sizeof(struct ncclDevComm) == 200 and
 * sizeof(struct ncclDevCommRequirements) == 56, so an implementation must
 * not write past 200 bytes of *outDevComm. */
struct ncclDevComm;
typedef struct ncclDevComm ncclDevComm_t;
struct ncclDevCommRequirements;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;

/* ---------------------------------------------------------------------- */
/* Library / version / errors                                              */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclGetVersion(int* version);
const char*  ncclGetErrorString(ncclResult_t result);
const char*  ncclGetLastError(ncclComm_t comm);

/* Deprecated in NCCL, still exported by libnccl.so.2 2.28.9. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("ncclResetDebugInit is not part of the supported NCCL API")))
#endif
void ncclResetDebugInit(void);

/* ---------------------------------------------------------------------- */
/* Memory                                                                  */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);

/* ---------------------------------------------------------------------- */
/* Communicator lifetime                                                   */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);

/* commId is passed by value (128-byte struct). */
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks,
                              ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                    ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks,
                                      int myrank, int nId,
                                      ncclUniqueId* commIds,
                                      ncclConfig_t* config);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                            int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags);

/* ---------------------------------------------------------------------- */
/* Communicator queries                                                    */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);

/* ---------------------------------------------------------------------- */
/* Buffer registration and symmetric windows                               */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                              void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                    ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* ---------------------------------------------------------------------- */
/* Device communicators (host side)                                        */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclDevCommCreate(ncclComm_t comm,
                               const ncclDevCommRequirements_t* reqs,
                               ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);

/* ---------------------------------------------------------------------- */
/* Custom reduction operators                                              */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                      ncclDataType_t datatype,
                                      ncclScalarResidence_t residence,
                                      ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---------------------------------------------------------------------- */
/* Collectives (enqueued on `stream`)                                      */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream);

/* count is per-rank output (input holds nranks*recvcount). */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                               size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);

/* count is per-rank input (output holds nranks*sendcount). */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);

/* Legacy in-place broadcast. */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype,
                       int root, ncclComm_t comm, cudaStream_t stream);

/* count elements go to / come from each peer. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream);

ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream);

/* ---------------------------------------------------------------------- */
/* Point-to-point                                                          */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclSend(const void* sendbuff, size_t count,
                      ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                      int peer, ncclComm_t comm, cudaStream_t stream);

/* ---------------------------------------------------------------------- */
/* Groups                                                                  */
/* ---------------------------------------------------------------------- */

ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* ---------------------------------------------------------------------- */
/* Compile-time ABI guards (LP64 numbers from NCCL 2.28.9)                 */
/* ---------------------------------------------------------------------- */

#if defined(__cplusplus)
#define NCCL_COHORT_ABI_CHECK(tag, cond) static_assert(cond, #tag)
#else
#define NCCL_COHORT_ABI_CHECK(tag, cond) \
  typedef char nccl_cohort_abi_check_##tag[(cond) ? 1 : -1]
#endif

NCCL_COHORT_ABI_CHECK(unique_id_size, sizeof(ncclUniqueId) == 128);
NCCL_COHORT_ABI_CHECK(redop_size, sizeof(ncclRedOp_t) == 4);
NCCL_COHORT_ABI_CHECK(dtype_size, sizeof(ncclDataType_t) == 4);
NCCL_COHORT_ABI_CHECK(result_size, sizeof(ncclResult_t) == 4);
#if defined(__LP64__) || defined(_WIN64)
NCCL_COHORT_ABI_CHECK(config_size, sizeof(ncclConfig_t) == 80);
NCCL_COHORT_ABI_CHECK(config_netname, offsetof(ncclConfig_t, netName) == 32);
NCCL_COHORT_ABI_CHECK(config_commname, offsetof(ncclConfig_t, commName) == 48);
NCCL_COHORT_ABI_CHECK(config_last,
                      offsetof(ncclConfig_t, nvlinkCentricSched) == 76);
NCCL_COHORT_ABI_CHECK(siminfo_size, sizeof(ncclSimInfo_t) == 24);
#endif

#undef NCCL_COHORT_ABI_CHECK

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
