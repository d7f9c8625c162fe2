/* A fake CUDA driver (built as libcuda.so.1 into a test-only folder put first on
 * LD_LIBRARY_PATH) for testing device buffers on a machine without a GPU.  Its "device
 * memory" is a memfd mapped twice: once PROT_NONE, the address the program gets (so any CPU
 * access, by Open MPI or by Cohort, faults exactly as device memory does under an MPI that is
 * not CUDA-aware), and once read-write, the backing that cuMemcpy copies to and from.
 *
 * It has what Cohort asks of the driver (src/core/cuda_driver.cc, src/core/host_memory.cc) and
 * what a test program needs to make device buffers the way it would on a real GPU (the
 * primary context, cuMemAlloc_v2, cuMemFree_v2), nothing else: the CUDA runtime, which wants
 * cuGetProcAddress and export tables, finds no usable driver here.
 *
 * Environment: FAKE_CUDA_DEVICES, the devices cuDeviceGetCount reports (1 by default);
 * FAKE_CUDA_FAIL_PINNED_COPY=RANK:N, on MPI world rank RANK the N-th copy (from 1) into
 * page-locked memory fails, synchronous or not (a staging copy: a test program's own copies
 * go to pageable memory).
 * Streams are real queues, each run in order by a thread of its own: asynchronous copies,
 * stream memory operations (32-bit write and wait), events, as the staged path of device
 * collectives uses them; the legacy and per-thread default streams are one more such queue.
 * A stream wait that no write satisfies in FAKE_CUDA_WAIT_LIMIT seconds (300 by default)
 * aborts the process, naming the word: a test that would hang fails instead.
 * Stream capture records a stream's ops (host functions too) into a graph; an instance of it
 * replays them onto a stream.  User objects count references held by graphs and instances,
 * and destroy inline when the last goes.
 * As the real driver, cuMemcpy from pageable memory to device memory returns once it read the
 * source, and lands later (FAKE_CUDA_PAGEABLE_DELAY_US, 200 by default) on the legacy default
 * stream; every other cuMemcpy and cuMemFree waits for that stream first, and so does work
 * enqueued on a stream created with default flags (ordered with the legacy stream), while a
 * CU_STREAM_NON_BLOCKING stream runs at once: a program that copies in with cuMemcpy and then
 * reads the memory on a non-blocking stream reads stale bytes here too.  Not modelled: the
 * legacy stream waiting for the blocking streams.
 * Not a real driver: one "device", contexts are a per-thread flag. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
  kSuccess = 0,
  kInvalidValue = 1,     /* CUDA_ERROR_INVALID_VALUE */
  kOutOfMemory = 2,      /* CUDA_ERROR_OUT_OF_MEMORY */
  kNotInitialized = 3,   /* CUDA_ERROR_NOT_INITIALIZED */
  kInvalidContext = 201, /* CUDA_ERROR_INVALID_CONTEXT */
  kInvalidDevice = 101,  /* CUDA_ERROR_INVALID_DEVICE */
  kNotReady = 600,       /* CUDA_ERROR_NOT_READY */
};
enum { kAttrMemoryType = 2, kAttrIsManaged = 8, kAttrDeviceOrdinal = 9 }; /* CU_POINTER_ATTRIBUTE_* */
enum { kMemoryTypeHost = 1, kMemoryTypeDevice = 2 };

/* One allocation: device memory (device: the PROT_NONE view, backing: the read-write one) or
 * page-locked host memory (cuMemHostAlloc: device == backing, readable by the CPU). */
typedef struct {
  char *device, *backing;
  size_t bytes, mapped;
  int is_device;
} Allocation;

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static Allocation *g_allocations;
static size_t g_count, g_capacity;
static int g_initialized;
static char g_context; /* the one context: its address is the handle */
static __thread CUcontext t_current;

static int device_count(void) {
  const char *text = getenv("FAKE_CUDA_DEVICES");
  return text != NULL ? atoi(text) : 1;
}

static int remember(Allocation a) {
  pthread_mutex_lock(&g_mutex);
  if (g_count == g_capacity) {
    size_t capacity = g_capacity ? 2 * g_capacity : 64;
    Allocation *grown = realloc(g_allocations, capacity * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&g_mutex);
      return 0;
    }
    g_allocations = grown;
    g_capacity = capacity;
  }
  g_allocations[g_count++] = a;
  pthread_mutex_unlock(&g_mutex);
  return 1;
}

/* The allocation holding p (copied out), 0 when none does. */
static int find(const void *p, Allocation *out) {
  const char *c = p;
  int found = 0;
  pthread_mutex_lock(&g_mutex);
  for (size_t i = 0; i < g_count && !found; ++i) {
    const Allocation *a = &g_allocations[i];
    if (c >= a->device && c < a->device + a->bytes) *out = *a, found = 1;
  }
  pthread_mutex_unlock(&g_mutex);
  return found;
}

/* Removes the allocation that starts at p (copied out), 0 when none does. */
static int forget(const void *p, int is_device, Allocation *out) {
  int found = 0;
  pthread_mutex_lock(&g_mutex);
  for (size_t i = 0; i < g_count; ++i) {
    if (g_allocations[i].device != p || g_allocations[i].is_device != is_device) continue;
    *out = g_allocations[i];
    g_allocations[i] = g_allocations[--g_count];
    found = 1;
    break;
  }
  pthread_mutex_unlock(&g_mutex);
  return found;
}

/* The legacy default stream (defined with the streams below). */
static void legacy_drain(void);
static CUresult legacy_copy_later(char *dst, const char *src, size_t bytes);

CUresult cuInit(unsigned flags) {
  (void)flags;
  g_initialized = 1;
  return kSuccess;
}

CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return kInvalidValue;
  *version = 12040;
  return kSuccess;
}

CUresult cuDeviceGetCount(int *count) {
  if (!g_initialized) return kNotInitialized;
  if (count == NULL) return kInvalidValue;
  *count = device_count();
  return kSuccess;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!g_initialized) return kNotInitialized;
  if (device == NULL || ordinal < 0 || ordinal >= device_count()) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (!g_initialized) return kNotInitialized;
  if (context == NULL || device < 0 || device >= device_count()) return kInvalidDevice;
  *context = &g_context;
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  (void)device;
  return kSuccess;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  t_current = context;
  return kSuccess;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  if (context == NULL) return kInvalidValue;
  *context = t_current;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes) {
  if (t_current == NULL) return kInvalidContext;
  if (out == NULL || bytes == 0) return kInvalidValue;
  const long page = sysconf(_SC_PAGESIZE);
  Allocation a = {NULL, NULL, bytes, (bytes + page - 1) / page * page, 1};
  int fd = memfd_create("fake-cuda-device", MFD_CLOEXEC);
  if (fd < 0) return kOutOfMemory;
  if (ftruncate(fd, (off_t)a.mapped) != 0) {
    close(fd);
    return kOutOfMemory;
  }
  void *device = mmap(NULL, a.mapped, PROT_NONE, MAP_SHARED, fd, 0);
  void *backing = mmap(NULL, a.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (device == MAP_FAILED || backing == MAP_FAILED) {
    if (device != MAP_FAILED) munmap(device, a.mapped);
    if (backing != MAP_FAILED) munmap(backing, a.mapped);
    return kOutOfMemory;
  }
  a.device = device;
  a.backing = backing;
  if (!remember(a)) {
    munmap(device, a.mapped);
    munmap(backing, a.mapped);
    return kOutOfMemory;
  }
  *out = (CUdeviceptr)(uintptr_t)device;
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  legacy_drain();
  Allocation a;
  if (!forget((void *)(uintptr_t)ptr, 1, &a)) return kInvalidValue;
  munmap(a.device, a.mapped);
  munmap(a.backing, a.mapped);
  return kSuccess;
}

/* Page-locked memory between two PROT_NONE guard pages, so that an access before a staged
 * copy (or past its last page) faults here as it may on a real driver, whose pinned blocks
 * border unmapped memory (a staged MPI_Alltoallv read before its copy and crashed on a GPU
 * only). */
CUresult cuMemHostAlloc(void **out, size_t bytes, unsigned flags) {
  (void)flags;
  if (t_current == NULL) return kInvalidContext;
  if (out == NULL) return kInvalidValue;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t inner = ((bytes ? bytes : 1) + page - 1) / page * page;
  char *base = mmap(NULL, inner + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return kOutOfMemory;
  if (mprotect(base + page, inner, PROT_READ | PROT_WRITE) != 0) {
    munmap(base, inner + 2 * page);
    return kOutOfMemory;
  }
  /* Flush against the front guard: the bytes after the block up to the page end stay
   * readable, the bytes before it do not. */
  Allocation a = {base + page, base + page, bytes ? bytes : 1, inner, 0};
  if (!remember(a)) {
    munmap(base, inner + 2 * page);
    return kOutOfMemory;
  }
  *out = a.device;
  return kSuccess;
}

CUresult cuMemFreeHost(void *p) {
  Allocation a;
  if (!forget(p, 0, &a)) return kInvalidValue;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  munmap(a.backing - page, a.mapped + 2 * page);
  return kSuccess;
}

/* Where the CPU may touch `bytes` at p: the backing of device memory, p itself elsewhere.
 * NULL when a copy would run past the end of a device allocation. */
static char *cpu_view(CUdeviceptr p, size_t bytes) {
  char *c = (char *)(uintptr_t)p;
  Allocation a;
  if (!find(c, &a)) return c;
  if ((size_t)(c - a.device) + bytes > a.bytes) return NULL;
  return a.backing + (c - a.device);
}

/* Whether this copy into page-locked memory is the one FAKE_CUDA_FAIL_PINNED_COPY fails. */
static int injected_failure(CUdeviceptr dst) {
  static int rank = -2, nth = 0, seen = 0;
  if (rank == -2) {
    const char *text = getenv("FAKE_CUDA_FAIL_PINNED_COPY");
    const char *world = getenv("OMPI_COMM_WORLD_RANK");
    rank = -1;
    if (text != NULL && world != NULL && sscanf(text, "%d:%d", &rank, &nth) == 2 &&
        rank != atoi(world)) {
      rank = -1;
    }
  }
  Allocation a;
  if (rank < 0 || !find((const void *)(uintptr_t)dst, &a) || a.is_device) return 0;
  return ++seen == nth;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return kSuccess;
  if (injected_failure(dst)) return kInvalidValue;
  char *d = cpu_view(dst, bytes), *s = cpu_view(src, bytes);
  if (d == NULL || s == NULL) return kInvalidValue;
  Allocation a;
  const int from_pageable = !find((const void *)(uintptr_t)src, &a);
  const int to_device = find((const void *)(uintptr_t)dst, &a) && a.is_device;
  if (from_pageable && to_device) return legacy_copy_later(d, s, bytes);
  legacy_drain();
  memmove(d, s, bytes);
  return kSuccess;
}

/* As the real driver: memory it does not know (pageable) reads as type 0 and not managed,
 * with success. */
CUresult cuPointerGetAttributes(unsigned count, int *attributes, void **data, CUdeviceptr ptr) {
  if (!g_initialized) return kNotInitialized;
  if (attributes == NULL || data == NULL) return kInvalidValue;
  Allocation a;
  int known = find((const void *)(uintptr_t)ptr, &a);
  for (unsigned i = 0; i < count; ++i) {
    if (data[i] == NULL) return kInvalidValue;
    if (attributes[i] == kAttrMemoryType) {
      *(unsigned *)data[i] = !known ? 0 : a.is_device ? kMemoryTypeDevice : kMemoryTypeHost;
    } else if (attributes[i] == kAttrIsManaged) {
      *(unsigned *)data[i] = 0;
    } else if (attributes[i] == kAttrDeviceOrdinal) {
      *(int *)data[i] = known ? 0 : -2; /* every allocation is device 0's; unknown: CUDA's -2 */
    } else {
      return kInvalidValue;
    }
  }
  return kSuccess;
}

/* ---- streams and events */

typedef struct {
  atomic_ulong recorded;  /* records enqueued */
  /* Per record (its generation, modulo the ring): reached by its stream.  A wait waits for the
   * record made before it, not for a later one on another stream that may end first. */
  atomic_ulong completed[256];
} Event;

enum { kOpCopy, kOpWrite, kOpWait, kOpRecord, kOpWaitEvent, kOpHost };
typedef struct Op {
  int kind;
  char *dst;
  const char *src;
  size_t bytes;
  uint32_t *word;
  uint32_t value;
  Event *event;
  unsigned long generation;
  char *owned; /* a copy's source to free after it (cuMemcpy's snapshot of pageable memory) */
  struct Op *next;
  void (*fn)(void *); /* kOpHost: fn(data) */
  void *data;
} Op;

/* Stream capture: a captured stream's ops go into its graph instead; an instance replays a
 * copy of them onto a stream.  User objects are reference counts whose destructor runs
 * inline when the last goes. */
typedef struct UserObject {
  atomic_int refs;
  void *ptr;
  void (*destroy)(void *);
} UserObject;

typedef struct {
  Op *head, *tail;
  UserObject **objects; /* one reference each */
  size_t object_count;
} Graph;

typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  Op *head, *tail;
  int busy;    /* an op taken off the queue is running */
  int closing; /* destroyed: the thread ends once the queue is empty */
  int ordered; /* created with default flags: its work waits for the legacy stream's */
  pthread_t thread;
  Graph *capture; /* capturing: ops go there */
} Stream;

static double wait_limit(void) {
  const char *text = getenv("FAKE_CUDA_WAIT_LIMIT");
  return text != NULL ? atof(text) : 300;
}

static void pause_briefly(void) {
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}

static void run_op(Op *op) {
  switch (op->kind) {
    case kOpCopy:
      if (op->owned != NULL) { /* a pageable copy lands late */
        const char *text = getenv("FAKE_CUDA_PAGEABLE_DELAY_US");
        const long us = text != NULL ? atol(text) : 200;
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
      }
      memmove(op->dst, op->src, op->bytes);
      free(op->owned);
      break;
    case kOpWrite: __atomic_store_n(op->word, op->value, __ATOMIC_RELEASE); break;
    case kOpWait: {
      const double limit = wait_limit();
      struct timespec start, now;
      clock_gettime(CLOCK_MONOTONIC, &start);
      while ((int32_t)(__atomic_load_n(op->word, __ATOMIC_ACQUIRE) - op->value) < 0) {
        pause_briefly();
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) * 1e-9 > limit) {
          fprintf(stderr, "fake CUDA driver: a stream waited %.0f s for word %p to reach %u (it "
                  "holds %u)\n", limit, (void *)op->word, op->value, *op->word);
          abort();
        }
      }
      break;
    }
    case kOpRecord: atomic_store(&op->event->completed[op->generation % 256], op->generation); break;
    case kOpWaitEvent:
      while (atomic_load(&op->event->completed[op->generation % 256]) < op->generation) {
        pause_briefly();
      }
      break;
    case kOpHost: op->fn(op->data); break;
  }
}

static void *stream_thread(void *arg) {
  Stream *st = arg;
  pthread_mutex_lock(&st->mutex);
  for (;;) {
    while (st->head == NULL && !st->closing) pthread_cond_wait(&st->changed, &st->mutex);
    if (st->head == NULL) break;
    Op *op = st->head;
    st->head = op->next;
    if (st->head == NULL) st->tail = NULL;
    st->busy = 1;
    pthread_mutex_unlock(&st->mutex);
    run_op(op);
    free(op);
    pthread_mutex_lock(&st->mutex);
    st->busy = 0;
    pthread_cond_broadcast(&st->changed);
  }
  pthread_mutex_unlock(&st->mutex);
  return NULL;
}

static Stream *stream_new(void) {
  Stream *st = calloc(1, sizeof *st);
  if (st == NULL) return NULL;
  pthread_mutex_init(&st->mutex, NULL);
  pthread_cond_init(&st->changed, NULL);
  if (pthread_create(&st->thread, NULL, stream_thread, st) != 0) {
    free(st);
    return NULL;
  }
  return st;
}

/* NULL, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2): one default stream. */
static Stream *g_default_stream;
static void make_default(void) { g_default_stream = stream_new(); }

static Stream *resolve(void *handle) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if ((uintptr_t)handle > 2) return handle;
  pthread_once(&once, make_default);
  return g_default_stream;
}

static int stream_idle(Stream *st);
static CUresult enqueue(Stream *st, Op op);

/* What the legacy stream holds now, recorded on it: the ordered streams wait for it. */
static Event g_legacy_event;

static void graph_append(Graph *g, Op op) {
  Op *copy = malloc(sizeof *copy);
  if (copy == NULL) abort();
  *copy = op;
  copy->next = NULL;
  if (g->tail != NULL) {
    g->tail->next = copy;
  } else {
    g->head = copy;
  }
  g->tail = copy;
}

static CUresult push(void *handle, Op op) {
  Stream *st = resolve(handle);
  if (st != NULL && st->capture != NULL) {
    graph_append(st->capture, op);
    return kSuccess;
  }
  if (st != NULL && st->ordered && !stream_idle(g_default_stream)) {
    Op record = {kOpRecord, NULL, NULL, 0, NULL, 0, &g_legacy_event,
                 atomic_fetch_add(&g_legacy_event.recorded, 1) + 1, NULL, NULL, NULL, NULL};
    Op wait = record;
    wait.kind = kOpWaitEvent;
    CUresult r = enqueue(g_default_stream, record);
    if (r == kSuccess) r = enqueue(st, wait);
    if (r != kSuccess) return r;
  }
  return enqueue(st, op);
}

static CUresult enqueue(Stream *st, Op op) {
  Op *copy = malloc(sizeof *copy);
  if (st == NULL || copy == NULL) {
    free(copy);
    return kOutOfMemory;
  }
  *copy = op;
  copy->next = NULL;
  pthread_mutex_lock(&st->mutex);
  if (st->tail != NULL) {
    st->tail->next = copy;
  } else {
    st->head = copy;
  }
  st->tail = copy;
  pthread_cond_broadcast(&st->changed);
  pthread_mutex_unlock(&st->mutex);
  return kSuccess;
}

static int stream_idle(Stream *st) {
  pthread_mutex_lock(&st->mutex);
  const int idle = st->head == NULL && !st->busy;
  pthread_mutex_unlock(&st->mutex);
  return idle;
}

CUresult cuStreamCreate(void **out, unsigned flags) {
  if (t_current == NULL) return kInvalidContext;
  if (out == NULL) return kInvalidValue;
  Stream *st = stream_new();
  if (st == NULL) return kOutOfMemory;
  st->ordered = (flags & 1) == 0; /* not CU_STREAM_NON_BLOCKING */
  resolve(NULL);                  /* the legacy stream exists before the ordered ones look */
  *out = st;
  return kSuccess;
}

static void legacy_drain(void) {
  Stream *legacy = resolve(NULL);
  while (!stream_idle(legacy)) pause_briefly();
}

static CUresult legacy_copy_later(char *dst, const char *src, size_t bytes) {
  char *snapshot = malloc(bytes);
  if (snapshot == NULL) return kOutOfMemory;
  memcpy(snapshot, src, bytes);
  Op op = {kOpCopy, dst, snapshot, bytes, NULL, 0, NULL, 0, snapshot, NULL, NULL, NULL};
  return push(NULL, op);
}

CUresult cuStreamSynchronize(void *handle) {
  Stream *st = resolve(handle);
  while (!stream_idle(st)) pause_briefly();
  return kSuccess;
}

CUresult cuStreamDestroy_v2(void *handle) {
  Stream *st = resolve(handle);
  if (st == g_default_stream) return kInvalidValue;
  pthread_mutex_lock(&st->mutex);
  st->closing = 1;
  pthread_cond_broadcast(&st->changed);
  pthread_mutex_unlock(&st->mutex);
  pthread_join(st->thread, NULL);
  free(st);
  return kSuccess;
}

CUresult cuStreamQuery(void *handle) { return stream_idle(resolve(handle)) ? kSuccess : kNotReady; }

CUresult cuStreamIsCapturing(void *handle, int *status) {
  if (status == NULL) return kInvalidValue;
  *status = resolve(handle)->capture != NULL; /* CU_STREAM_CAPTURE_STATUS_ACTIVE: 1 */
  return kSuccess;
}

CUresult cuStreamBeginCapture_v2(void *handle, int mode) {
  (void)mode;
  Stream *st = resolve(handle);
  if (st == g_default_stream || st->capture != NULL) return kInvalidValue;
  st->capture = calloc(1, sizeof(Graph));
  return st->capture != NULL ? kSuccess : kOutOfMemory;
}

CUresult cuStreamEndCapture(void *handle, void **graph) {
  Stream *st = resolve(handle);
  if (st->capture == NULL || graph == NULL) return kInvalidValue;
  *graph = st->capture;
  st->capture = NULL;
  return kSuccess;
}

CUresult cuStreamGetCaptureInfo_v2(void *handle, int *status, unsigned long long *id, void **graph,
                                   const void **deps, size_t *deps_count) {
  Stream *st = resolve(handle);
  if (status != NULL) *status = st->capture != NULL;
  if (id != NULL) *id = (uintptr_t)st->capture;
  if (graph != NULL) *graph = st->capture;
  if (deps != NULL) *deps = NULL;
  if (deps_count != NULL) *deps_count = 0;
  return kSuccess;
}

CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
  return mode != NULL ? kSuccess : kInvalidValue;
}

CUresult cuLaunchHostFunc(void *stream, void (*fn)(void *), void *data) {
  if (fn == NULL) return kInvalidValue;
  Op op = {kOpHost, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, NULL, fn, data};
  return push(stream, op);
}

CUresult cuUserObjectCreate(void **out, void *ptr, void (*destroy)(void *), unsigned refs,
                            unsigned flags) {
  if (out == NULL || destroy == NULL || refs == 0 || flags != 1) return kInvalidValue;
  UserObject *o = calloc(1, sizeof *o);
  if (o == NULL) return kOutOfMemory;
  atomic_store(&o->refs, (int)refs);
  o->ptr = ptr;
  o->destroy = destroy;
  *out = o;
  return kSuccess;
}

CUresult cuUserObjectRelease(void *object, unsigned count) {
  UserObject *o = object;
  if (o == NULL) return kInvalidValue;
  if (atomic_fetch_sub(&o->refs, (int)count) == (int)count) {
    o->destroy(o->ptr);
    free(o);
  }
  return kSuccess;
}

/* Moves (flags 1) or adds `count` references; the graph holds them as `count` entries. */
CUresult cuGraphRetainUserObject(void *graph, void *object, unsigned count, unsigned flags) {
  Graph *g = graph;
  UserObject *o = object;
  if (g == NULL || o == NULL || count == 0) return kInvalidValue;
  if ((flags & 1) == 0) atomic_fetch_add(&o->refs, (int)count);
  UserObject **grown = realloc(g->objects, (g->object_count + count) * sizeof *grown);
  if (grown == NULL) return kOutOfMemory;
  g->objects = grown;
  for (unsigned i = 0; i < count; ++i) g->objects[g->object_count++] = o;
  return kSuccess;
}

static void graph_free(Graph *g) {
  for (size_t i = 0; i < g->object_count; ++i) cuUserObjectRelease(g->objects[i], 1);
  for (Op *op = g->head, *next; op != NULL; op = next) {
    next = op->next;
    free(op);
  }
  free(g->objects);
  free(g);
}

/* An instance: a copy of the ops, and a reference of its own to each user object. */
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  (void)flags;
  Graph *g = graph, *e = calloc(1, sizeof(Graph));
  if (g == NULL || exec == NULL || e == NULL) {
    free(e);
    return g == NULL || exec == NULL ? kInvalidValue : kOutOfMemory;
  }
  for (Op *op = g->head; op != NULL; op = op->next) graph_append(e, *op);
  for (size_t i = 0; i < g->object_count; ++i) {
    CUresult r = cuGraphRetainUserObject(e, g->objects[i], 1, 0);
    if (r != kSuccess) return r;
  }
  *exec = e;
  return kSuccess;
}

CUresult cuGraphLaunch(void *exec, void *stream) {
  Graph *e = exec;
  if (e == NULL) return kInvalidValue;
  for (Op *op = e->head; op != NULL; op = op->next) {
    Op copy = *op;
    if (copy.kind == kOpRecord) copy.generation = atomic_fetch_add(&copy.event->recorded, 1) + 1;
    if (copy.kind == kOpWaitEvent) copy.generation = atomic_load(&copy.event->recorded);
    CUresult r = push(stream, copy);
    if (r != kSuccess) return r;
  }
  return kSuccess;
}

CUresult cuGraphExecDestroy(void *exec) {
  if (exec == NULL) return kInvalidValue;
  graph_free(exec);
  return kSuccess;
}

CUresult cuGraphDestroy(void *graph) {
  if (graph == NULL) return kInvalidValue;
  graph_free(graph);
  return kSuccess;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) {
  if (bytes == 0) return kSuccess;
  if (injected_failure(dst)) return kInvalidValue;
  char *d = cpu_view(dst, bytes), *s = cpu_view(src, bytes);
  if (d == NULL || s == NULL) return kInvalidValue;
  Op op = {kOpCopy, d, s, bytes, NULL, 0, NULL, 0, NULL, NULL, NULL, NULL};
  return push(stream, op);
}

CUresult cuStreamWriteValue32_v2(void *stream, CUdeviceptr addr, uint32_t value, unsigned flags) {
  (void)flags;
  Op op = {kOpWrite, NULL, NULL, 0, (uint32_t *)(uintptr_t)addr, value, NULL, 0,
           NULL, NULL, NULL, NULL};
  return push(stream, op);
}

CUresult cuStreamWaitValue32_v2(void *stream, CUdeviceptr addr, uint32_t value, unsigned flags) {
  if (flags != 0) return kInvalidValue; /* GEQ only */
  Op op = {kOpWait, NULL, NULL, 0, (uint32_t *)(uintptr_t)addr, value, NULL, 0,
           NULL, NULL, NULL, NULL};
  return push(stream, op);
}

CUresult cuEventCreate(void **out, unsigned flags) {
  (void)flags;
  if (out == NULL) return kInvalidValue;
  *out = calloc(1, sizeof(Event));
  return *out != NULL ? kSuccess : kOutOfMemory;
}

CUresult cuEventDestroy_v2(void *event) {
  free(event);
  return kSuccess;
}

CUresult cuEventRecord(void *event, void *stream) {
  Event *e = event;
  Op op = {kOpRecord, NULL, NULL, 0, NULL, 0, e, atomic_fetch_add(&e->recorded, 1) + 1,
           NULL, NULL, NULL, NULL};
  return push(stream, op);
}

CUresult cuEventQuery(void *event) {
  Event *e = event;
  const unsigned long last = atomic_load(&e->recorded);
  return atomic_load(&e->completed[last % 256]) >= last ? kSuccess : kNotReady;
}

CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  (void)flags;
  Event *e = event;
  Op op = {kOpWaitEvent, NULL, NULL, 0, NULL, 0, e, atomic_load(&e->recorded),
           NULL, NULL, NULL, NULL};
  return push(stream, op);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *out, void *host, unsigned flags) {
  (void)flags;
  if (out == NULL) return kInvalidValue;
  *out = (CUdeviceptr)(uintptr_t)host;
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  t_current = context;
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  if (context != NULL) *context = t_current;
  t_current = NULL;
  return kSuccess;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  static char words[64];
  if (text == NULL) return kInvalidValue;
  snprintf(words, sizeof words, "fake CUDA driver error %d", error);
  *text = words;
  return kSuccess;
}

/* Tells a test that this is the fake (a real driver has no such symbol). */
int fake_cuda_driver(void) { return 1; }
