/*
 * Cohort: collectives for MPI jobs on GPU clusters.  Public C API.
 *
 * Every call returns a cohort_status_t.  On failure, cohort_last_error() returns a
 * thread-local message that names the argument, phase or peer at fault.  Output
 * parameters are written only on success.
 */
#ifndef COHORT_H
#define COHORT_H

#include <stddef.h>
#include <stdint.h>

/* No MPI here: teams from MPI communicators and the MPI type mappings are in cohort_mpi.h, so
 * that programs without MPI (and Cohort's libnccl.so.2) build and run where none is installed. */

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exports: everything else in libcohort.so is hidden. */
#if defined(__GNUC__)
#define COHORT_API __attribute__((visibility("default")))
#else
#define COHORT_API
#endif

#define COHORT_VERSION_MAJOR 0
#define COHORT_VERSION_MINOR 1
#define COHORT_VERSION_PATCH 0
#define COHORT_VERSION_CODE \
  (COHORT_VERSION_MAJOR * 10000 + COHORT_VERSION_MINOR * 100 + COHORT_VERSION_PATCH)

/* ------------------------------------------------------------------ status */

typedef enum {
  COHORT_SUCCESS = 0,
  COHORT_IN_PROGRESS = 1,        /* nonblocking operation not finished yet */
  COHORT_ERR_INVALID_ARG = -1,   /* a bad argument; the message names it */
  COHORT_ERR_INVALID_USAGE = -2, /* misuse: wrong order, mismatched ranks, duplicate GPU */
  COHORT_ERR_NOT_SUPPORTED = -3, /* valid request this build or team cannot serve */
  COHORT_ERR_NO_MEMORY = -4,
  COHORT_ERR_SYSTEM = -5,    /* an OS call failed */
  COHORT_ERR_MPI = -6,       /* an MPI call failed */
  COHORT_ERR_CUDA = -7,      /* a CUDA call failed */
  COHORT_ERR_TIMEOUT = -8,   /* peers did not arrive in time; the message names them */
  COHORT_ERR_ABORTED = -9,   /* the team was aborted */
  COHORT_ERR_INTERNAL = -10, /* a bug in Cohort: please report it */
  /* Not statuses: they make every int a value of this type, so C callers passing any int
   * get a named error, never undefined behaviour in C++. */
  COHORT_STATUS_RANGE_MIN_ = -0x7fffffff - 1,
  COHORT_STATUS_RANGE_MAX_ = 0x7fffffff
} cohort_status_t;

/* Static name of a status, e.g. "COHORT_ERR_TIMEOUT". */
COHORT_API const char *cohort_status_string(cohort_status_t status);

/* Detail of the last failed call on this thread ("" if none).  Valid until the next
 * Cohort call on this thread. */
COHORT_API const char *cohort_last_error(void);

/* Version as MAJOR*10000 + MINOR*100 + PATCH. */
COHORT_API int cohort_version(void);

/* ------------------------------------------------------ data types and ops */

/* Element types of collective buffers.  fp16 and bf16 reduce in fp32. */
typedef enum {
  COHORT_INT8 = 0,
  COHORT_UINT8,
  COHORT_INT32,
  COHORT_UINT32,
  COHORT_INT64,
  COHORT_UINT64,
  COHORT_FLOAT16, /* IEEE 754 binary16 */
  COHORT_BFLOAT16,
  COHORT_FLOAT32,
  COHORT_FLOAT64,
  COHORT_NUM_DTYPES,
  /* Not types: any int is a value of cohort_dtype_t; out-of-range ones get a named error. */
  COHORT_DTYPE_RANGE_MIN_ = -0x7fffffff - 1,
  COHORT_DTYPE_RANGE_MAX_ = 0x7fffffff
} cohort_dtype_t;

/* Reduction operators.  AVG is the sum divided by the team size (for integers, rounded
 * toward zero). */
typedef enum {
  COHORT_SUM = 0,
  COHORT_PROD,
  COHORT_MIN,
  COHORT_MAX,
  COHORT_AVG,
  COHORT_NUM_OPS,
  /* Not ops: any int is a value of cohort_op_t; out-of-range ones get a named error. */
  COHORT_OP_RANGE_MIN_ = -0x7fffffff - 1,
  COHORT_OP_RANGE_MAX_ = 0x7fffffff
} cohort_op_t;

/* ------------------------------------------------------------ memory kinds */

/* Where a buffer lives.  Collectives pick their algorithm by it (cohort_info --algorithms). */
typedef enum {
  COHORT_MEMORY_HOST = 0,     /* host memory CUDA does not know (pageable) */
  COHORT_MEMORY_CUDA_HOST,    /* host memory pinned or registered with CUDA */
  COHORT_MEMORY_CUDA_MANAGED, /* CUDA managed (unified) memory */
  COHORT_MEMORY_CUDA_DEVICE,  /* CUDA device memory */
  COHORT_NUM_MEMORY_KINDS,
  /* Not kinds: any int is a value of cohort_memory_kind_t. */
  COHORT_MEMORY_KIND_RANGE_MIN_ = -0x7fffffff - 1,
  COHORT_MEMORY_KIND_RANGE_MAX_ = 0x7fffffff
} cohort_memory_kind_t;

/* The kind of memory at ptr, asked of the CUDA driver (loaded at run time).  Only a thread
 * with a current CUDA context is asked about; on any other thread (and without a driver or a
 * device) every buffer is COHORT_MEMORY_HOST: make your device current before you
 * communicate, as NCCL requires.  A collective this thread starts on ptr within 100 us takes
 * this answer instead of asking the driver again (a caller that routes calls by memory kind
 * pays one query per buffer): do not free and reuse ptr as another kind in between. */
COHORT_API cohort_status_t cohort_memory_kind(const void *ptr, cohort_memory_kind_t *kind);
/* "host", "cuda-host", "cuda-managed", "cuda-device"; "invalid" for other values. */
COHORT_API const char *cohort_memory_kind_name(cohort_memory_kind_t kind);

/* How many CUDA devices this process can use (0 without an NVIDIA driver or device). */
COHORT_API cohort_status_t cohort_cuda_device_count(int *count);

/* Staging memory for callers that must move device buffers through the host (the Open MPI
 * component does, for calls it cannot run on the GPU).  cohort_host_alloc gives page-locked
 * memory (cuMemHostAlloc, portable) when the calling thread has a CUDA context, ordinary
 * memory otherwise; free it with cohort_host_free.  cohort_memcpy copies between any two
 * kinds (the CUDA driver's cuMemcpy when either side is device or managed memory, memcpy
 * otherwise) and returns when the copy is done. */
COHORT_API cohort_status_t cohort_host_alloc(size_t bytes, void **ptr);
COHORT_API cohort_status_t cohort_host_free(void *ptr);
COHORT_API cohort_status_t cohort_memcpy(void *dst, const void *src, size_t bytes);
/* Device memory on the calling thread's current CUDA device (cuMemAlloc): staging for host
 * buffers that must join a call the other ranks run on the GPU (as ncclMemAlloc, without
 * registration).  COHORT_ERR_CUDA when the thread has no CUDA context, COHORT_ERR_NO_MEMORY
 * when the device is full; 0 bytes gives NULL.  Free it with cohort_device_free. */
COHORT_API cohort_status_t cohort_device_alloc(size_t bytes, void **ptr);
COHORT_API cohort_status_t cohort_device_free(void *ptr);

/* ------------------------------------------------------------ out-of-band */

/* A generic out-of-band allgather, as UCC's ucc_oob_coll: Cohort calls allgather() with
 * msglen bytes per rank and polls req_test() until it returns COHORT_SUCCESS, then calls
 * req_free().  req_test returns COHORT_IN_PROGRESS while pending and an error status on
 * failure.  On a timeout, abort or destroy, req_free() is also called on a request that is
 * still pending: the OOB must then release it without waiting (Cohort leaves the buffers it
 * passed alive).  A team created this way cannot name which rank is missing on a timeout, and
 * cannot be split (use cohort_team_create_mpi for both). */
typedef struct cohort_oob {
  cohort_status_t (*allgather)(const void *sbuf, void *rbuf, size_t msglen, void *coll_info,
                               void **request);
  cohort_status_t (*req_test)(void *request);
  cohort_status_t (*req_free)(void *request);
  void *coll_info;
  uint32_t size; /* number of ranks taking part */
  uint32_t rank; /* this process's index among them */
} cohort_oob_t;

/* ------------------------------------------------------------------ config */

#define COHORT_DEVICE_CURRENT (-1) /* the calling thread's current CUDA device */
#define COHORT_DEVICE_NONE (-2)    /* host-only team: bind no GPU */
/* The calling thread's current CUDA device if the thread has a CUDA context (the program uses
 * a GPU already), else none: a CPU-only program on a GPU node binds no GPU and starts no CUDA
 * context. */
#define COHORT_DEVICE_ACTIVE (-3)

#define COHORT_TEAM_CONFIG_MAGIC 0xc0407c0fu

/* Team options.  Initialise with cohort_team_config_init() (or the initializer), then set
 * the fields you care about; a negative / NULL value means "take the COHORT_* environment
 * variable or its default" (see `cohort_info`). */
typedef struct cohort_team_config {
  size_t size;          /* sizeof(cohort_team_config_t), for ABI evolution */
  unsigned int magic;   /* COHORT_TEAM_CONFIG_MAGIC */
  double init_timeout;  /* seconds a phase may wait for peers; < 0: COHORT_INIT_TIMEOUT */
  int cuda_device;      /* ordinal or COHORT_DEVICE_CURRENT / _NONE / _ACTIVE */
  int allow_shared_gpu; /* 1: several ranks may share a GPU (MPS); 0: no; < 0: env */
  const char *name;     /* label used in logs; NULL: "team" */
} cohort_team_config_t;

#define COHORT_TEAM_CONFIG_INITIALIZER \
  { sizeof(cohort_team_config_t), COHORT_TEAM_CONFIG_MAGIC, -1.0, COHORT_DEVICE_CURRENT, -1, NULL }

COHORT_API cohort_status_t cohort_team_config_init(cohort_team_config_t *config);

/* -------------------------------------------------------------------- team */

typedef struct cohort_team *cohort_team_t;

#define COHORT_SPLIT_NOCOLOR (-1) /* split(): this rank takes part but gets no team */

/* Teams from an MPI communicator: cohort_team_create_mpi in cohort_mpi.h.
 * Over a generic OOB, nonblocking: returns a team handle at once; drive it with
 * cohort_team_create_test() until it returns something other than COHORT_IN_PROGRESS.
 * On failure the handle stays valid (queries fail) until cohort_team_destroy(). */
COHORT_API cohort_status_t cohort_team_create_oob_post(const cohort_oob_t *oob,
                                                       const cohort_team_config_t *config,
                                                       cohort_team_t *team);
COHORT_API cohort_status_t cohort_team_create_test(cohort_team_t team);

/* Blocking creation over a generic OOB. */
COHORT_API cohort_status_t cohort_team_create_oob(const cohort_oob_t *oob,
                                                  const cohort_team_config_t *config,
                                                  cohort_team_t *team);

/* Collective over parent: ranks with equal color form a child team ordered by key, ties in
 * parent order (as ncclCommSplit).  color = COHORT_SPLIT_NOCOLOR takes part and gets
 * *child = NULL.  config NULL: inherit the parent's. */
COHORT_API cohort_status_t cohort_team_split(cohort_team_t parent, int color, int key,
                                             const cohort_team_config_t *config,
                                             cohort_team_t *child);

/* Releases everything the team holds; the handle is invalid afterwards (later calls with it
 * return COHORT_ERR_INVALID_ARG).  Local: needs no other rank. */
COHORT_API cohort_status_t cohort_team_destroy(cohort_team_t team);

/* Stops the team now, also during a nonblocking creation, without waiting for peers: they
 * fail at once with a message naming this rank.  (If this rank had already confirmed its
 * check-in, the communicator duplication the others may be in is finished in the background,
 * by MPI_Finalize at the latest.)  The handle stays valid: later calls on it return
 * COHORT_ERR_ABORTED; destroy frees it.  Calling it from another thread than the one driving
 * the team needs MPI_THREAD_MULTIPLE. */
COHORT_API cohort_status_t cohort_team_abort(cohort_team_t team);

/* COHORT_SUCCESS, COHORT_IN_PROGRESS while a nonblocking creation runs, or the error that
 * stopped the team (e.g. COHORT_ERR_ABORTED). */
COHORT_API cohort_status_t cohort_team_get_async_error(cohort_team_t team,
                                                       cohort_status_t *async_error);

/* Teams without MPI, as NCCL's ncclGetUniqueId / ncclCommInitRank: one process makes an id and
 * hands its bytes to every rank (any way it likes); each rank then creates the team with it.
 * The id carries this process's rendezvous address (one listening TCP socket per process, on
 * the interface COHORT_SOCKET_IFNAME, else NCCL_SOCKET_IFNAME, else the first one up that is
 * not loopback) and a 128-bit secret: a connection without the secret is dropped and logged.
 * The process that made the id must take part in the team (it serves the rendezvous; no
 * thread is started).  An id never used expires after COHORT_INIT_TIMEOUT.  The creation
 * has the same phases, report and timeout as one from MPI: a missing rank is named on every
 * rank.  Such a team cannot be split (NOT_SUPPORTED); create the children from new ids. */
#define COHORT_UNIQUE_ID_BYTES 128
typedef struct cohort_unique_id {
  char internal[COHORT_UNIQUE_ID_BYTES];
} cohort_unique_id_t;

COHORT_API cohort_status_t cohort_unique_id_create(cohort_unique_id_t *id);
/* Collective over the size ranks given the same id; rank in 0..size-1, each once. */
COHORT_API cohort_status_t cohort_team_create_unique_id(const cohort_unique_id_t *id, int size,
                                                        int rank,
                                                        const cohort_team_config_t *config,
                                                        cohort_team_t *team);
/* Nonblocking form: drive it with cohort_team_create_test(). */
COHORT_API cohort_status_t cohort_team_create_unique_id_post(const cohort_unique_id_t *id,
                                                             int size, int rank,
                                                             const cohort_team_config_t *config,
                                                             cohort_team_t *team);

/* Queries (valid once creation succeeded). */
COHORT_API cohort_status_t cohort_team_size(cohort_team_t team, int *size);
COHORT_API cohort_status_t cohort_team_rank(cohort_team_t team, int *rank);
COHORT_API cohort_status_t cohort_team_cuda_device(cohort_team_t team,
                                                   int *device); /* -1: no GPU */
COHORT_API cohort_status_t cohort_team_node_count(cohort_team_t team, int *node_count);
COHORT_API cohort_status_t cohort_team_node_index(cohort_team_t team, int *node_index);
COHORT_API cohort_status_t cohort_team_local_rank(cohort_team_t team, int *local_rank);
COHORT_API cohort_status_t cohort_team_local_size(cohort_team_t team, int *local_size);
COHORT_API cohort_status_t cohort_team_host_id(cohort_team_t team, uint64_t *host_id);

/* Identity of any rank of the team, as gathered in the peer-info phase. */
typedef struct cohort_peer_info {
  int rank;
  int node_index;
  int local_rank;
  int pid;
  uint64_t host_id;
  char hostname[64]; /* host label: COHORT_HOST_ID when set, else the hostname */
  int cuda_device;   /* ordinal in that process, -1: none */
  char bus_id[32];   /* "0000:3b:00.0", "" without GPU */
  uint8_t uuid[16];  /* GPU UUID, zero without GPU */
  int numa_node;     /* -1: unknown */
} cohort_peer_info_t;

COHORT_API cohort_status_t cohort_team_peer_info(cohort_team_t team, int rank,
                                                 cohort_peer_info_t *info);

/* ------------------------------------------------------------------- plan */

/* The rings and trees the team runs collectives on, chosen in creation's graphs and align
 * phases and identical on every rank (checked by hash).  Channel c follows ring c and tree
 * c % 2 of the double binary tree across hosts (a chain within each host). */
typedef struct cohort_plan_info {
  int channels;
  double bw_per_channel;  /* GB/s, the slowest host's; 0 when no rank uses a GPU */
  const char *intra_path; /* worst path between ring neighbours in a host: "LOC", "NVL", ... */
  const char *net_path;   /* worst path from a ring's end GPU to its NIC; "LOC" in one host */
  int nodes;
  uint64_t hash;
} cohort_plan_info_t;

COHORT_API cohort_status_t cohort_team_plan_info(cohort_team_t team, cohort_plan_info_t *info);
/* This rank's neighbours in ring `channel` (0 <= channel < channels). */
COHORT_API cohort_status_t cohort_team_plan_ring(cohort_team_t team, int channel, int *prev,
                                                 int *next);
/* This rank's parent (-1: root) and children (-1: none; down[0] is the next rank of its host's
 * chain, down[1..2] chain heads of other hosts) in the tree of `channel`. */
COHORT_API cohort_status_t cohort_team_plan_tree(cohort_team_t team, int channel, int *up,
                                                 int down[3]);

/* ------------------------------------------------------ host collectives */

/* Collectives on host memory, blocking: every rank of the team calls the same collective with
 * matching arguments, in the same order.  Within one host they run over shared memory,
 * between hosts over UCX.  In place as NCCL: sendbuf == recvbuf, or for allgather
 * sendbuf == recvbuf + rank * count elements, for reduce-scatter
 * recvbuf == sendbuf + rank * count elements.  A collective that makes no progress for
 * COHORT_COLL_TIMEOUT seconds fails with COHORT_ERR_TIMEOUT naming the ranks it waits for;
 * the team then refuses further collectives (destroy it).
 * Call them from one thread per team at a time. */
COHORT_API cohort_status_t cohort_allreduce(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                            size_t count, cohort_dtype_t dtype, cohort_op_t op);
/* recvbuf is only used (and may be NULL elsewhere) on the root. */
COHORT_API cohort_status_t cohort_reduce(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                         size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                         int root);
/* sendbuf is only read on the root. */
COHORT_API cohort_status_t cohort_broadcast(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                            size_t count, cohort_dtype_t dtype, int root);
/* recvbuf holds size * sendcount elements, rank r's at r * sendcount. */
COHORT_API cohort_status_t cohort_allgather(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                            size_t sendcount, cohort_dtype_t dtype);
/* sendbuf holds size * recvcount elements; rank r gets block r reduced. */
COHORT_API cohort_status_t cohort_reduce_scatter(cohort_team_t team, const void *sendbuf,
                                                 void *recvbuf, size_t recvcount,
                                                 cohort_dtype_t dtype, cohort_op_t op);
/* Both buffers hold size * count elements: block q of sendbuf goes to rank q. */
COHORT_API cohort_status_t cohort_alltoall(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                           size_t count, cohort_dtype_t dtype);
COHORT_API cohort_status_t cohort_barrier(cohort_team_t team);
/* Gather: on the root, recvbuf holds size * sendcount elements, rank r's sendbuf at
 * r * sendcount; recvbuf is only used (and may be NULL elsewhere) on the root.  In place on
 * the root: sendbuf == recvbuf + root * sendcount elements (the other ranks pass their
 * sendbuf as usual). */
COHORT_API cohort_status_t cohort_gather(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                         size_t sendcount, cohort_dtype_t dtype, int root);
/* Scatter: on the root, sendbuf holds size * recvcount elements and block r goes to rank r's
 * recvbuf; sendbuf is only read (and may be NULL elsewhere) on the root.  In place on the
 * root: recvbuf == sendbuf + root * recvcount elements. */
COHORT_API cohort_status_t cohort_scatter(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                          size_t recvcount, cohort_dtype_t dtype, int root);
/* Inclusive scan: rank r's recvbuf gets op over the sendbufs of ranks 0..r, element by
 * element.  In place: sendbuf == recvbuf.  COHORT_AVG is refused (COHORT_ERR_INVALID_ARG):
 * MPI has no prefix average; scan with COHORT_SUM and divide by r + 1. */
COHORT_API cohort_status_t cohort_scan(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                       size_t count, cohort_dtype_t dtype, cohort_op_t op);
/* Exclusive scan: rank r > 0 gets op over ranks 0..r-1.  Rank 0's recvbuf is not written
 * (MPI leaves it undefined; here it keeps what it held, and may be NULL).  In place:
 * sendbuf == recvbuf.  COHORT_AVG is refused as for cohort_scan. */
COHORT_API cohort_status_t cohort_exscan(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                         size_t count, cohort_dtype_t dtype, cohort_op_t op);
/* V-variants (MPI's allgatherv, alltoallv, gatherv, scatterv, reduce_scatter): each rank's
 * block has its own count and displacement, in elements of dtype.  The arrays hold one entry
 * per rank and are read during the call only (the _post forms copy them); any count may be 0.
 * A buffer may be NULL where this rank moves no element of it.
 * - allgatherv: rank r sends recvcounts[r] elements from sendbuf, which land at
 *   recvbuf + displs[r] on every rank.  In place: sendbuf == recvbuf + displs[rank].
 * - alltoallv: block q of sendbuf (sendcounts[q] elements at sdispls[q]) goes to rank q, which
 *   puts it at its rdispls[rank] (recvcounts[rank] elements).  In place: sendbuf == recvbuf;
 *   then the receive layout serves both sides and sendcounts, sdispls may be NULL.
 * - gatherv: rank r sends sendcount elements, which land at recvbuf + displs[r] on the root
 *   (recvcounts[r] elements).  recvbuf, recvcounts and displs are used (and may be NULL) on the
 *   root only.  In place on the root: sendbuf == recvbuf + displs[root] (sendcount unused).
 * - scatterv: the root sends sendcounts[r] elements from sendbuf + displs[r] to rank r's recvbuf
 *   (recvcount elements).  sendbuf, sendcounts and displs are used only on the root.  In place
 *   on the root: recvbuf == sendbuf + displs[root] (recvcount unused).
 * - reduce_scatterv: sendbuf holds sum(recvcounts) elements; rank r gets op over the ranks'
 *   blocks of recvcounts[r] elements that start at recvcounts[0] + ... + recvcounts[r-1]
 *   (COHORT_AVG divides by the team size, as reduce-scatter).  In place: recvbuf == sendbuf +
 *   that start.
 * A block's displacement + count must fit a buffer, and a rank's block to itself must have one
 * size on both sides (alltoallv's sendcounts[rank] == recvcounts[rank], the root's sendcount
 * or recvcount == its own entry); otherwise COHORT_ERR_INVALID_ARG, before any traffic (the
 * root's own arrays are checked on the root only: as for gather, the others then wait for it
 * until COHORT_COLL_TIMEOUT).
 * Counts that disagree between ranks (rank r sends 5 elements where its receiver expects 7)
 * are the caller's duty, as in MPI: the channels carry bytes without sizes, so no rank can
 * tell.  Such a call may return COHORT_SUCCESS with wrong data, leave bytes that corrupt the
 * next collective or make it stall until COHORT_COLL_TIMEOUT, or stall itself. */
COHORT_API cohort_status_t cohort_allgatherv(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                             const size_t *recvcounts, const size_t *displs,
                                             cohort_dtype_t dtype);
COHORT_API cohort_status_t cohort_alltoallv(cohort_team_t team, const void *sendbuf,
                                            const size_t *sendcounts, const size_t *sdispls,
                                            void *recvbuf, const size_t *recvcounts,
                                            const size_t *rdispls, cohort_dtype_t dtype);
COHORT_API cohort_status_t cohort_gatherv(cohort_team_t team, const void *sendbuf, size_t sendcount,
                                          void *recvbuf, const size_t *recvcounts,
                                          const size_t *displs, cohort_dtype_t dtype, int root);
COHORT_API cohort_status_t cohort_scatterv(cohort_team_t team, const void *sendbuf,
                                           const size_t *sendcounts, const size_t *displs,
                                           void *recvbuf, size_t recvcount, cohort_dtype_t dtype,
                                           int root);
COHORT_API cohort_status_t cohort_reduce_scatterv(cohort_team_t team, const void *sendbuf,
                                                  void *recvbuf, const size_t *recvcounts,
                                                  cohort_dtype_t dtype, cohort_op_t op);
/* Gather, scatter, scan, exscan and the v-variants take host memory only (device memory:
 * COHORT_ERR_NOT_SUPPORTED naming the call); they have no stream-ordered form yet. */

/* Nonblocking forms: the same arguments, plus a request that cohort_request_test (returns
 * COHORT_IN_PROGRESS until done) or cohort_request_wait completes.  A team runs its posted
 * collectives one at a time in posting order (blocking calls queue behind them); each test or
 * wait moves the team's queue on.  Buffers belong to the collective until it completed.
 * Free every request; a request freed unfinished still runs as the team progresses, and a
 * request keeps its team alive after cohort_team_destroy. */
typedef struct cohort_request *cohort_request_t;
COHORT_API cohort_status_t cohort_allreduce_post(cohort_team_t team, const void *sendbuf,
                                                 void *recvbuf, size_t count, cohort_dtype_t dtype,
                                                 cohort_op_t op, cohort_request_t *request);
COHORT_API cohort_status_t cohort_reduce_post(cohort_team_t team, const void *sendbuf,
                                              void *recvbuf, size_t count, cohort_dtype_t dtype,
                                              cohort_op_t op, int root, cohort_request_t *request);
COHORT_API cohort_status_t cohort_broadcast_post(cohort_team_t team, const void *sendbuf,
                                                 void *recvbuf, size_t count, cohort_dtype_t dtype,
                                                 int root, cohort_request_t *request);
COHORT_API cohort_status_t cohort_allgather_post(cohort_team_t team, const void *sendbuf,
                                                 void *recvbuf, size_t sendcount,
                                                 cohort_dtype_t dtype, cohort_request_t *request);
COHORT_API cohort_status_t cohort_reduce_scatter_post(cohort_team_t team, const void *sendbuf,
                                                      void *recvbuf, size_t recvcount,
                                                      cohort_dtype_t dtype, cohort_op_t op,
                                                      cohort_request_t *request);
COHORT_API cohort_status_t cohort_alltoall_post(cohort_team_t team, const void *sendbuf,
                                                void *recvbuf, size_t count, cohort_dtype_t dtype,
                                                cohort_request_t *request);
COHORT_API cohort_status_t cohort_barrier_post(cohort_team_t team, cohort_request_t *request);
COHORT_API cohort_status_t cohort_gather_post(cohort_team_t team, const void *sendbuf,
                                              void *recvbuf, size_t sendcount, cohort_dtype_t dtype,
                                              int root, cohort_request_t *request);
COHORT_API cohort_status_t cohort_scatter_post(cohort_team_t team, const void *sendbuf,
                                               void *recvbuf, size_t recvcount,
                                               cohort_dtype_t dtype, int root,
                                               cohort_request_t *request);
COHORT_API cohort_status_t cohort_scan_post(cohort_team_t team, const void *sendbuf, void *recvbuf,
                                            size_t count, cohort_dtype_t dtype, cohort_op_t op,
                                            cohort_request_t *request);
COHORT_API cohort_status_t cohort_exscan_post(cohort_team_t team, const void *sendbuf,
                                              void *recvbuf, size_t count, cohort_dtype_t dtype,
                                              cohort_op_t op, cohort_request_t *request);
COHORT_API cohort_status_t cohort_allgatherv_post(cohort_team_t team, const void *sendbuf,
                                                  void *recvbuf, const size_t *recvcounts,
                                                  const size_t *displs, cohort_dtype_t dtype,
                                                  cohort_request_t *request);
COHORT_API cohort_status_t cohort_alltoallv_post(cohort_team_t team, const void *sendbuf,
                                                 const size_t *sendcounts, const size_t *sdispls,
                                                 void *recvbuf, const size_t *recvcounts,
                                                 const size_t *rdispls, cohort_dtype_t dtype,
                                                 cohort_request_t *request);
COHORT_API cohort_status_t cohort_gatherv_post(cohort_team_t team, const void *sendbuf,
                                               size_t sendcount, void *recvbuf,
                                               const size_t *recvcounts, const size_t *displs,
                                               cohort_dtype_t dtype, int root,
                                               cohort_request_t *request);
COHORT_API cohort_status_t cohort_scatterv_post(cohort_team_t team, const void *sendbuf,
                                                const size_t *sendcounts, const size_t *displs,
                                                void *recvbuf, size_t recvcount,
                                                cohort_dtype_t dtype, int root,
                                                cohort_request_t *request);
COHORT_API cohort_status_t cohort_reduce_scatterv_post(cohort_team_t team, const void *sendbuf,
                                                       void *recvbuf, const size_t *recvcounts,
                                                       cohort_dtype_t dtype, cohort_op_t op,
                                                       cohort_request_t *request);
COHORT_API cohort_status_t cohort_request_test(cohort_request_t request);
COHORT_API cohort_status_t cohort_request_wait(cohort_request_t request);
COHORT_API cohort_status_t cohort_request_free(cohort_request_t request);

/* ------------------------------------------------- stream-ordered collectives */

/* Collectives on GPU device memory, ordered on a CUDA stream: the same arguments as the
 * blocking calls plus `stream` (a cudaStream_t; NULL: CUDA's default stream).  Each checks its
 * arguments, enqueues a kernel and returns: no host synchronisation, allocation or callback,
 * so a CUDA graph may capture the calls and replay them.  Every local rank enqueues the same
 * calls in the same order.  Every buffer the rank uses must be device memory of the team's
 * GPU: host memory of any kind (pageable, pinned, managed), alone or beside device memory, or
 * device memory of another GPU, is COHORT_ERR_INVALID_ARG naming the buffer.  The blocking
 * calls above take device memory too (they run on the team's own stream and wait for it); there
 * device memory beside host memory is COHORT_ERR_NOT_SUPPORTED, another GPU's
 * COHORT_ERR_INVALID_ARG.  A kernel that waits for a peer longer than
 * COHORT_COLL_TIMEOUT, or whose team was aborted (cohort_team_abort on any rank), ends; the
 * next call on the team returns COHORT_ERR_TIMEOUT / COHORT_ERR_ABORTED naming the call and
 * the peer.  A team that spans hosts (or whose GPUs on one host lack peer access) runs them
 * through page-locked host memory: the stream copies each piece of the buffers out and back,
 * and Cohort's progress thread carries it over the host path in between (no host thread of
 * the caller's waits; a CUDA graph may capture such calls too). */
COHORT_API cohort_status_t cohort_allreduce_stream(cohort_team_t team, const void *sendbuf,
                                                   void *recvbuf, size_t count,
                                                   cohort_dtype_t dtype, cohort_op_t op,
                                                   void *stream);
COHORT_API cohort_status_t cohort_reduce_stream(cohort_team_t team, const void *sendbuf,
                                                void *recvbuf, size_t count, cohort_dtype_t dtype,
                                                cohort_op_t op, int root, void *stream);
COHORT_API cohort_status_t cohort_broadcast_stream(cohort_team_t team, const void *sendbuf,
                                                   void *recvbuf, size_t count,
                                                   cohort_dtype_t dtype, int root, void *stream);
COHORT_API cohort_status_t cohort_allgather_stream(cohort_team_t team, const void *sendbuf,
                                                   void *recvbuf, size_t sendcount,
                                                   cohort_dtype_t dtype, void *stream);
COHORT_API cohort_status_t cohort_reduce_scatter_stream(cohort_team_t team, const void *sendbuf,
                                                        void *recvbuf, size_t recvcount,
                                                        cohort_dtype_t dtype, cohort_op_t op,
                                                        void *stream);
COHORT_API cohort_status_t cohort_alltoall_stream(cohort_team_t team, const void *sendbuf,
                                                  void *recvbuf, size_t count, cohort_dtype_t dtype,
                                                  void *stream);
COHORT_API cohort_status_t cohort_barrier_stream(cohort_team_t team, void *stream);

/* --------------------------------------------------- registered device buffers */

/* Registers a device buffer with the team, so that the team's collectives on device memory
 * can move data straight between the ranks' buffers: with the buffers of a call registered on
 * every local rank, a large allreduce reads each input byte and writes each output byte once,
 * instead of copying through the team's windows (allgather, alltoall: the receive buffers;
 * reduce-scatter: the send buffers; allreduce: both).  Collective: every rank of the team calls it,
 * in the same order with respect to its other (de)registrations, each with a buffer of its own
 * (sizes may differ).  The buffer must be cudaMalloc'd device memory of the team's GPU (a
 * cudaMallocAsync pool or cuMemCreate memory cannot be shared through CUDA IPC); a buffer one
 * rank cannot register fails the call on every rank, naming that rank and why.  A collective
 * uses the registrations when its send and receive buffers lie in registered buffers (at any
 * offset) on every local rank; otherwise the same call runs through the windows, on every rank
 * alike.  Calls captured in CUDA graphs keep the registration they were captured with: it must
 * outlive them.  At most 1024 registrations per team at once; teams on one host with a GPU on
 * every rank (COHORT_ERR_NOT_SUPPORTED otherwise, saying why). */
typedef struct cohort_mem_reg_s *cohort_mem_reg_t;
COHORT_API cohort_status_t cohort_mem_register(cohort_team_t team, void *buffer, size_t bytes,
                                               cohort_mem_reg_t *reg);
/* Collective, as cohort_mem_register: waits until every rank's collectives on the team ended,
 * then releases `reg` (the buffer may be freed once it returns).  Destroying the team releases
 * its registrations' mappings too; their handles are then no longer valid. */
COHORT_API cohort_status_t cohort_mem_deregister(cohort_team_t team, cohort_mem_reg_t reg);

/* The registration cache, for libraries that call Cohort with their users' device buffers
 * (the Open MPI component uses it; an application registers its own buffers as above).  A
 * cached registration is made, and evicted, by the team's sync only, so no call pays a round
 * trip of its own in the steady state.
 * - cohort_mem_cache_note: local.  This rank's next call uses [buffer, buffer + bytes):
 *   *registered is 1 when the CUDA allocation holding it is registered with the team (a call
 *   whose buffers are so on every local rank takes the zero-copy algorithms), else 0, and the
 *   allocation is queued for the next sync, unless it cannot be (not device memory of the
 *   team's GPU, memory CUDA IPC cannot share: a cudaMallocAsync pool, cuMemCreate).  Memory
 *   freed, and maybe allocated again at its address, is found out here by the driver's buffer
 *   id and is never served the old registration.
 * - cohort_mem_cache_wanted: local.  *wanted is 1 when this rank has allocations queued, or
 *   registrations to evict (it asks the driver whether each cached allocation still lives).
 * - cohort_mem_cache_sync: collective, every rank of the team at the same point of its calls
 *   (where the ranks agree anyway, e.g. when some rank's *wanted was 1, learned in an exchange
 *   they make regardless).  It registers every rank's queued allocations (two per rank per
 *   sync) and evicts what the ranks give up (freed allocations, and the least recently used
 *   beyond COHORT_REG_CACHE_ENTRIES per rank), alike on every rank; an allocation some rank
 *   cannot map stays unregistered on every rank.  When something is evicted it first waits
 *   for this rank's calls on the team to end; every rank's calls that read an evicted
 *   allocation must have ended (blocking calls have).
 * A team that does not run collectives on the GPU (across hosts, without CUDA, one rank)
 * caches nothing: *registered and *wanted are 0, and the sync does nothing. */
COHORT_API cohort_status_t cohort_mem_cache_note(cohort_team_t team, const void *buffer,
                                                 size_t bytes, int *registered);
COHORT_API cohort_status_t cohort_mem_cache_wanted(cohort_team_t team, int *wanted);
COHORT_API cohort_status_t cohort_mem_cache_sync(cohort_team_t team);

/* Point-to-point: `count` elements to or from team rank `peer` (self included, inside a
 * group).  Messages between two ranks match in order; the receive's size must equal the
 * send's.  Between cohort_group_start and cohort_group_end (per thread, nestable) operations
 * are only checked and collected; the outermost cohort_group_end runs them all together, so a
 * group may exchange with many peers at once without deadlock (ring shifts, alltoallv).  If an
 * operation in a group fails its check, that call returns the error and cohort_group_end runs
 * nothing and returns it too.
 * cohort_send / cohort_recv: host, managed or GPU device memory; cohort_group_end returns when
 * every operation completed (outside a group each call is blocking: a send larger than the
 * channel waits for its receive).
 * cohort_send_stream / cohort_recv_stream: stream-ordered, like the _stream collectives: the
 * buffers are read and written when `stream` (a cudaStream_t; NULL: CUDA's default stream)
 * reaches the operation, and cohort_group_end only enqueues (outside a group, so does the
 * call).  One team's operations in a group are all blocking or all stream-ordered; on several
 * streams, the group runs after what each of them holds, and each runs on after the group.
 * On device memory, send/recv runs through page-locked host memory, within a host and across
 * hosts: the sends' bytes are copied into it, the group runs over the host path, the bytes
 * received are copied back; a group is staged whole (host memory of its total size, kept for
 * the team's later calls).  A group on one stream may be captured into a CUDA graph; one on
 * several streams is refused in a capture (COHORT_ERR_NOT_SUPPORTED).  The stream-ordered
 * operations take device memory of the team's GPU (COHORT_ERR_INVALID_ARG otherwise). */
COHORT_API cohort_status_t cohort_send(cohort_team_t team, const void *buf, size_t count,
                                       cohort_dtype_t dtype, int peer);
COHORT_API cohort_status_t cohort_recv(cohort_team_t team, void *buf, size_t count,
                                       cohort_dtype_t dtype, int peer);
COHORT_API cohort_status_t cohort_send_stream(cohort_team_t team, const void *buf, size_t count,
                                              cohort_dtype_t dtype, int peer, void *stream);
COHORT_API cohort_status_t cohort_recv_stream(cohort_team_t team, void *buf, size_t count,
                                              cohort_dtype_t dtype, int peer, void *stream);
COHORT_API cohort_status_t cohort_group_start(void);
COHORT_API cohort_status_t cohort_group_end(void);

/* ------------------------------------------------------------- init report */

#define COHORT_MAX_PHASES 16

typedef struct cohort_phase_stats {
  const char *name; /* "check-in", "peer-info", ... */
  int64_t min_ns;
  int64_t median_ns;
  int64_t max_ns;
  int slowest_rank; /* rank that spent max_ns */
} cohort_phase_stats_t;

typedef struct cohort_init_report {
  int num_phases;
  cohort_phase_stats_t phases[COHORT_MAX_PHASES];
  cohort_phase_stats_t total;
} cohort_init_report_t;

COHORT_API cohort_status_t cohort_team_init_report(cohort_team_t team,
                                                   cohort_init_report_t *report);

/* Writes the report as text (the table printed at COHORT_DEBUG=INFO); truncates to len. */
COHORT_API cohort_status_t cohort_team_init_report_format(cohort_team_t team, char *buf,
                                                          size_t len);

#ifdef __cplusplus
}
#endif

#endif /* COHORT_H */
