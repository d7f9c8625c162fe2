// NCCL's API on Cohort (libnccl.so.2), as an NCCL program calls it: no MPI, the ranks forked
// here and the unique id passed through a pipe.  Buffers come from ncclMemAlloc, streams from
// the CUDA driver: the real one on a GPU machine, the tests' fake one elsewhere (each rank then
// on a fake host of its own, so that device memory moves through host memory).
//
//   nccl_api_test <scenario> <ranks>     scenarios: colls, nonblocking, split, shrink, errors,
//                                        missing, perf (nccl-tests' report: sizes to
//                                        NCCL_API_TEST_MAX_BYTES, algbw, busbw, #wrong)
// Exit status 0: every rank saw what the scenario expects; 77: no CUDA driver (skip).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "forked_ranks.h"
#include "nccl.h"

namespace {

#define CHECK_NCCL(call)                                                                  \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    CHECK(r_ == ncclSuccess, "%s: %s (%s)", #call, ncclGetErrorString(r_),                \
          ncclGetLastError(nullptr));                                                     \
  } while (0)

// The CUDA driver, loaded as the library finds it.
struct Driver {
  int (*init)(unsigned);
  int (*device_get)(int *, int);
  int (*retain)(void **, int);
  int (*set_current)(void *);
  int (*stream_create)(void **, unsigned);
  int (*stream_sync)(void *);
  int (*copy)(uintptr_t, uintptr_t, size_t);  // cuMemcpy: unified addresses, either way

  bool start() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    init = reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "cuInit"));
    device_get = reinterpret_cast<int (*)(int *, int)>(dlsym(lib, "cuDeviceGet"));
    retain = reinterpret_cast<int (*)(void **, int)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    set_current = reinterpret_cast<int (*)(void *)>(dlsym(lib, "cuCtxSetCurrent"));
    stream_create = reinterpret_cast<int (*)(void **, unsigned)>(dlsym(lib, "cuStreamCreate"));
    stream_sync = reinterpret_cast<int (*)(void *)>(dlsym(lib, "cuStreamSynchronize"));
    copy = reinterpret_cast<int (*)(uintptr_t, uintptr_t, size_t)>(dlsym(lib, "cuMemcpy"));
    int device = 0;
    void *ctx = nullptr;
    return init != nullptr && init(0) == 0 && device_get(&device, 0) == 0 &&
           retain(&ctx, device) == 0 && set_current(ctx) == 0;
  }
} g_cuda;

using Pipe = forked::IdPipe;

ncclUniqueId share_id(const Pipe &p, int rank, int readers) {
  ncclUniqueId id;
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    forked::send_id(p, id, readers);
  } else {
    id = forked::receive_id<ncclUniqueId>(p);
  }
  return id;
}

void copy_bytes(void *dst, const void *src, size_t bytes) {
  CHECK(g_cuda.copy(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes) == 0,
        "cuMemcpy of %zu bytes", bytes);
}

// Device buffers of T, filled and read through the host.
template <typename T>
struct Buffer {
  T *dev = nullptr;
  size_t count;
  explicit Buffer(size_t n) : count(n) {
    CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void **>(&dev), n * sizeof(T) + 1));
  }
  ~Buffer() { ncclMemFree(dev); }
  void set(const std::function<T(size_t)> &f) {
    std::vector<T> h(count);
    for (size_t i = 0; i < count; ++i) h[i] = f(i);
    copy_bytes(dev, h.data(), count * sizeof(T));
  }
  std::vector<T> get() const {
    std::vector<T> h(count);
    copy_bytes(h.data(), dev, count * sizeof(T));
    return h;
  }
};

template <typename T>
void expect(const char *what, const std::vector<T> &got, const std::function<T(size_t)> &want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want(i)) {
      CHECK(false, "%s: element %zu is %g, expected %g", what, i, static_cast<double>(got[i]),
            static_cast<double>(want(i)));
      return;
    }
  }
}

void sync(cudaStream_t s) { CHECK(g_cuda.stream_sync(s) == 0, "stream synchronize"); }

// Every collective and a ring of sends, checked element by element.
void run_colls(ncclComm_t comm, int n, int r, cudaStream_t st) {
  const size_t count = 1000 + 37 * n;
  Buffer<float> a(count), b(count);
  a.set([&](size_t i) { return float((r + 1) * (i % 97)); });
  CHECK_NCCL(ncclAllReduce(a.dev, b.dev, count, ncclFloat, ncclSum, comm, st));
  sync(st);
  const float ranks_sum = float(n * (n + 1) / 2);
  expect<float>("allreduce sum", b.get(), [&](size_t i) { return ranks_sum * float(i % 97); });
  CHECK_NCCL(ncclAllReduce(a.dev, b.dev, count, ncclFloat, ncclMax, comm, st));
  sync(st);
  expect<float>("allreduce max", b.get(), [&](size_t i) { return float(n * (i % 97)); });

  Buffer<int32_t> ia(count), ib(count);
  ia.set([&](size_t i) { return int32_t(r * 10 + int(i % 5)); });
  CHECK_NCCL(ncclAllReduce(ia.dev, ia.dev, count, ncclInt32, ncclAvg, comm, st));  // in place
  sync(st);
  expect<int32_t>("allreduce avg in place", ia.get(),
                  [&](size_t i) { return int32_t((10 * n * (n - 1) / 2) / n + int(i % 5)); });

  ia.set([&](size_t i) { return int32_t(r + int(i)); });
  const int root = n - 1;
  CHECK_NCCL(ncclReduce(ia.dev, ib.dev, count, ncclInt32, ncclMin, root, comm, st));
  sync(st);
  if (r == root) expect<int32_t>("reduce min", ib.get(), [&](size_t i) { return int32_t(i); });

  ia.set([&](size_t i) { return int32_t(r == 0 ? 7 * int(i) : -1); });
  CHECK_NCCL(ncclBcast(ia.dev, count, ncclInt32, 0, comm, st));
  sync(st);
  expect<int32_t>("bcast", ia.get(), [&](size_t i) { return int32_t(7 * int(i)); });

  Buffer<int32_t> all(count * n);
  ia.set([&](size_t i) { return int32_t(r * 100000 + int(i)); });
  CHECK_NCCL(ncclAllGather(ia.dev, all.dev, count, ncclInt32, comm, st));
  sync(st);
  expect<int32_t>("allgather", all.get(),
                  [&](size_t i) { return int32_t((i / count) * 100000 + i % count); });

  all.set([&](size_t i) { return int32_t(r + int(i)); });
  CHECK_NCCL(ncclReduceScatter(all.dev, ib.dev, count, ncclInt32, ncclSum, comm, st));
  sync(st);
  expect<int32_t>("reduce-scatter", ib.get(), [&](size_t i) {
    return int32_t(n * (n - 1) / 2 + n * int(r * count + i));
  });

  Buffer<int32_t> sends(count * n), recvs(count * n);
  sends.set([&](size_t i) { return int32_t(r * 1000 + int(i / count)); });  // block p to rank p
  CHECK_NCCL(ncclAlltoAll(sends.dev, recvs.dev, count, ncclInt32, comm, st));
  sync(st);
  expect<int32_t>("alltoall", recvs.get(),
                  [&](size_t i) { return int32_t(int(i / count) * 1000 + r); });

  CHECK_NCCL(ncclGather(ia.dev, all.dev, count, ncclInt32, root, comm, st));
  sync(st);
  if (r == root) {
    expect<int32_t>("gather", all.get(),
                    [&](size_t i) { return int32_t((i / count) * 100000 + i % count); });
  }
  sends.set([&](size_t i) { return int32_t(int(i / count) * 3 + 1); });
  CHECK_NCCL(ncclScatter(sends.dev, ib.dev, count, ncclInt32, 0, comm, st));
  sync(st);
  expect<int32_t>("scatter", ib.get(), [&](size_t) { return int32_t(r * 3 + 1); });

  // A ring shift in one group, and fp8 moved as bytes.
  Buffer<uint8_t> out8(count), in8(count);
  out8.set([&](size_t i) { return uint8_t((r * 31 + i) & 0xff); });
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(out8.dev, count, ncclFloat8e4m3, (r + 1) % n, comm, st));
  CHECK_NCCL(ncclRecv(in8.dev, count, ncclFloat8e4m3, (r + n - 1) % n, comm, st));
  CHECK_NCCL(ncclGroupEnd());
  sync(st);
  const int from = (r + n - 1) % n;
  expect<uint8_t>("send/recv ring (fp8 bytes)", in8.get(),
                  [&](size_t i) { return uint8_t((from * 31 + i) & 0xff); });
  ncclResult_t refused = ncclAllReduce(out8.dev, in8.dev, count, ncclFloat8e5m2, ncclSum, comm, st);
  CHECK(refused == ncclInvalidArgument && strstr(ncclGetLastError(comm), "fp8") != nullptr,
        "an fp8 allreduce: %s (%s)", ncclGetErrorString(refused), ncclGetLastError(comm));
}

ncclComm_t init(const Pipe &p, int n, int r) {
  ncclUniqueId id = share_id(p, r, n - 1);
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, n, id, r));
  return comm;
}

void scenario_colls(const Pipe &p, int n, int r, cudaStream_t st) {
  int version = 0;
  CHECK_NCCL(ncclGetVersion(&version));
  CHECK(version == NCCL_VERSION_CODE, "ncclGetVersion: %d, expected %d", version,
        NCCL_VERSION_CODE);
  ncclComm_t comm = init(p, n, r);
  if (comm == nullptr) return;
  int count = 0, rank = -1, device = -2;
  CHECK_NCCL(ncclCommCount(comm, &count));
  CHECK_NCCL(ncclCommUserRank(comm, &rank));
  CHECK_NCCL(ncclCommCuDevice(comm, &device));
  // The fake driver's device is not one Cohort's topology sees: the team binds none.
  const int want_device = getenv("NCCL_API_TEST_FAKE_CUDA") != nullptr ? -1 : 0;
  CHECK(count == n && rank == r && device == want_device, "count %d rank %d device %d", count,
        rank, device);
  run_colls(comm, n, r, st);
  ncclResult_t async = ncclInternalError;
  CHECK_NCCL(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSuccess, "async error %s", ncclGetErrorString(async));
  CHECK_NCCL(ncclCommFinalize(comm));
  CHECK_NCCL(ncclCommDestroy(comm));
}

void scenario_nonblocking(const Pipe &p, int n, int r, cudaStream_t st) {
  ncclUniqueId id = share_id(p, r, n - 1);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nonblocking";
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRankConfig(&comm, n, id, r, &config);
  CHECK(res == ncclInProgress, "a nonblocking init: %s (%s)", ncclGetErrorString(res),
        ncclGetLastError(nullptr));
  if (comm == nullptr) return;
  ncclResult_t async = ncclInProgress;
  for (int polls = 0; async == ncclInProgress && polls < 2000000; ++polls) {
    CHECK_NCCL(ncclCommGetAsyncError(comm, &async));
    if (async == ncclInProgress) usleep(100);
  }
  CHECK(async == ncclSuccess, "the nonblocking init ended with %s (%s)", ncclGetErrorString(async),
        ncclGetLastError(comm));
  run_colls(comm, n, r, st);
  CHECK_NCCL(ncclCommDestroy(comm));
}

void scenario_split(const Pipe &p, int n, int r, cudaStream_t st) {
  ncclComm_t comm = init(p, n, r);
  if (comm == nullptr) return;
  ncclComm_t half = nullptr, none = nullptr;
  CHECK_NCCL(ncclCommSplit(comm, r % 2, -r, &half, nullptr));
  const int members = (n - r % 2 + 1) / 2;
  int count = 0, rank = -1;
  if (half != nullptr) {
    CHECK_NCCL(ncclCommCount(half, &count));
    CHECK_NCCL(ncclCommUserRank(half, &rank));
    // Keys are -rank: the highest parent rank of each color comes first.
    const int expected_rank = (members - 1) - r / 2;
    CHECK(count == members && rank == expected_rank, "split: count %d rank %d, expected %d %d",
          count, rank, members, expected_rank);
    run_colls(half, count, rank, st);
    CHECK_NCCL(ncclCommDestroy(half));
  } else {
    CHECK(false, "split gave no communicator");
  }
  // Only rank 0 gets a communicator; the others pass NCCL_SPLIT_NOCOLOR.
  CHECK_NCCL(ncclCommSplit(comm, r == 0 ? 5 : NCCL_SPLIT_NOCOLOR, 0, &none, nullptr));
  CHECK((r == 0) == (none != nullptr), "NOCOLOR: communicator %p on rank %d", (void *)none, r);
  if (none != nullptr) {
    run_colls(none, 1, 0, st);
    ncclCommDestroy(none);
  }
  run_colls(comm, n, r, st);  // the parent still works
  CHECK_NCCL(ncclCommDestroy(comm));
}

// The last rank leaves (destroys its communicator without shrinking); the others shrink.
void scenario_shrink(const Pipe &p, int n, int r, cudaStream_t st) {
  ncclComm_t comm = init(p, n, r);
  if (comm == nullptr) return;
  if (r == n - 1) {
    sleep(1);
    ncclCommDestroy(comm);
    return;
  }
  int excluded = n - 1;
  ncclComm_t small = nullptr;
  CHECK_NCCL(ncclCommShrink(comm, &excluded, 1, &small, nullptr, NCCL_SHRINK_DEFAULT));
  if (small != nullptr) {
    run_colls(small, n - 1, r, st);
    ncclCommDestroy(small);
  }
  ncclResult_t res = ncclCommShrink(comm, &excluded, 1, &small, nullptr, NCCL_SHRINK_ABORT);
  CHECK(res == ncclInvalidUsage && strstr(ncclGetLastError(comm), "NCCL_SHRINK_ABORT"),
        "shrink with abort: %s (%s)", ncclGetErrorString(res), ncclGetLastError(comm));
  ncclCommDestroy(comm);
}

void scenario_errors(const Pipe &p, int n, int r, cudaStream_t st) {
  ncclUniqueId id = share_id(p, r, n - 1);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x1234;
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRankConfig(&comm, n, id, r, &bad);
  CHECK(res == ncclInvalidArgument && strstr(ncclGetLastError(nullptr), "magic"),
        "a config with a bad magic: %s (%s)", ncclGetErrorString(res), ncclGetLastError(nullptr));
  comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, n, id, r));
  if (comm == nullptr) return;
  float *buf = nullptr;
  CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void **>(&buf), 64));
  res = ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, nullptr, st);
  CHECK(res == ncclInvalidArgument, "a NULL comm: %s", ncclGetErrorString(res));
  res = ncclAllReduce(buf, buf, 4, static_cast<ncclDataType_t>(99), ncclSum, comm, st);
  CHECK(res == ncclInvalidArgument, "datatype 99: %s", ncclGetErrorString(res));
  res = ncclAllReduce(buf, buf, 4, ncclFloat, static_cast<ncclRedOp_t>(17), comm, st);
  CHECK(res == ncclInvalidArgument, "op 17: %s", ncclGetErrorString(res));
  ncclRedOp_t op;
  float scalar = 0.5f;
  res = ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comm);
  CHECK(res == ncclInvalidUsage && strstr(ncclGetLastError(comm), "Cohort"),
        "PreMulSum: %s (%s)", ncclGetErrorString(res), ncclGetLastError(comm));
  res = ncclSend(buf, 4, ncclFloat, n + 3, comm, st);
  CHECK(res == ncclInvalidArgument, "a send to rank %d: %s (%s)", n + 3, ncclGetErrorString(res),
        ncclGetLastError(comm));
  void *handle = nullptr;
  CHECK_NCCL(ncclCommRegister(comm, buf, 64, &handle));
  CHECK_NCCL(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, st));
  CHECK_NCCL(ncclCommDeregister(comm, handle));
  res = ncclCommDeregister(comm, handle);
  CHECK(res == ncclInvalidArgument, "deregistering twice: %s", ncclGetErrorString(res));
  sync(st);
  ncclMemFree(buf);
  CHECK_NCCL(ncclCommDestroy(comm));
  res = ncclCommCount(comm, &n);
  CHECK(res == ncclInvalidArgument, "a destroyed comm: %s", ncclGetErrorString(res));
}

// nccl-tests' report for each collective: bytes, time per call (us, the slowest rank's mean),
// algbw and busbw (GB/s, nccl-tests' factors) and #wrong (elements that differ from the
// expected result after one checked call).  Sizes double from 8 B to NCCL_API_TEST_MAX_BYTES.
struct PerfColl {
  const char *name;
  double bus_factor_num;  // busbw = algbw * num(n) / n
  int out_blocks;         // receive buffer: count * out_blocks(n) elements (0: n)
  int in_blocks;          // send buffer: count * in_blocks elements (0: n)
};

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Fills rank r's input, runs `name` once, and counts the wrong elements of the result.
size_t checked_call(const PerfColl &c, ncclComm_t comm, int n, int r, size_t count, float *in,
                    float *out, cudaStream_t st, bool run_only) {
  const size_t in_len = count * (c.in_blocks ? c.in_blocks : n);
  const size_t out_len = count * (c.out_blocks ? c.out_blocks : n);
  std::vector<float> h(in_len);
  if (!run_only) {
    for (size_t i = 0; i < in_len; ++i) h[i] = float((r + 1) * (i % 13));
    copy_bytes(in, h.data(), in_len * sizeof(float));
  }
  const std::string name = c.name;
  ncclResult_t res = ncclSuccess;
  const int peer_next = (r + 1) % n, peer_prev = (r + n - 1) % n;
  if (name == "all_reduce") res = ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, st);
  else if (name == "all_gather") res = ncclAllGather(in, out, count, ncclFloat, comm, st);
  else if (name == "broadcast") res = ncclBroadcast(in, out, count, ncclFloat, 0, comm, st);
  else if (name == "reduce") res = ncclReduce(in, out, count, ncclFloat, ncclSum, 0, comm, st);
  else if (name == "reduce_scatter")
    res = ncclReduceScatter(in, out, count, ncclFloat, ncclSum, comm, st);
  else if (name == "alltoall") res = ncclAlltoAll(in, out, count, ncclFloat, comm, st);
  else if (name == "sendrecv") {
    ncclGroupStart();
    ncclSend(in, count, ncclFloat, peer_next, comm, st);
    ncclRecv(out, count, ncclFloat, peer_prev, comm, st);
    res = ncclGroupEnd();
  }
  if (res != ncclSuccess) return out_len;
  if (run_only) return 0;
  sync(st);
  std::vector<float> got(out_len);
  copy_bytes(got.data(), out, out_len * sizeof(float));
  const float ranks_sum = float(n * (n + 1) / 2);
  size_t wrong = 0;
  for (size_t i = 0; i < out_len; ++i) {
    float want = 0;
    if (name == "all_reduce") want = ranks_sum * float(i % 13);
    else if (name == "all_gather") want = float((i / count + 1) * ((i % count) % 13));
    else if (name == "broadcast") want = float(i % 13);
    else if (name == "reduce") want = r == 0 ? ranks_sum * float(i % 13) : got[i];
    else if (name == "reduce_scatter") want = ranks_sum * float((r * count + i) % 13);
    else if (name == "alltoall") want = float((i / count + 1) * ((r * count + i % count) % 13));
    else if (name == "sendrecv") want = float((peer_prev + 1) * (i % 13));
    if (got[i] != want) ++wrong;
  }
  return wrong;
}

void scenario_perf(const Pipe &p, int n, int r, cudaStream_t st) {
  ncclComm_t comm = init(p, n, r);
  if (comm == nullptr) return;
  const char *max_env = getenv("NCCL_API_TEST_MAX_BYTES");
  const size_t max_bytes = max_env != nullptr ? strtoull(max_env, nullptr, 10) : (1u << 20);
  const PerfColl colls[] = {{"all_reduce", 2.0 * (n - 1), 1, 1}, {"all_gather", double(n - 1), 0, 1},
                            {"broadcast", double(n), 1, 1},       {"reduce", double(n), 1, 1},
                            {"reduce_scatter", double(n - 1), 1, 0}, {"alltoall", double(n - 1), 0, 0},
                            {"sendrecv", double(n), 1, 1}};
  float *in = nullptr, *out = nullptr, *stat = nullptr;
  CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void **>(&in), max_bytes * n + 64));
  CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void **>(&out), max_bytes * n + 64));
  CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void **>(&stat), 64));
  if (r == 0) printf("# %d ranks\n#%15s %12s %12s %10s %10s %8s\n", n, "collective", "bytes",
                     "time_us", "algbw", "busbw", "#wrong");
  for (const PerfColl &c : colls) {
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
      // bytes: the larger buffer, as nccl-tests reports it; count: elements per block.
      const int blocks = std::max(c.in_blocks ? c.in_blocks : n, c.out_blocks ? c.out_blocks : n);
      const size_t count = std::max<size_t>(1, bytes / sizeof(float) / blocks);
      float wrong = float(checked_call(c, comm, n, r, count, in, out, st, false));
      const int iters = bytes <= 65536 ? 50 : 10;
      sync(st);
      const double start = now_s();
      for (int i = 0; i < iters; ++i) checked_call(c, comm, n, r, count, in, out, st, true);
      sync(st);
      float stats[2] = {float((now_s() - start) / iters), wrong};
      copy_bytes(stat, stats, sizeof(stats));
      CHECK_NCCL(ncclAllReduce(stat, stat, 1, ncclFloat, ncclMax, comm, st));
      CHECK_NCCL(ncclAllReduce(stat + 1, stat + 1, 1, ncclFloat, ncclSum, comm, st));
      sync(st);
      copy_bytes(stats, stat, sizeof(stats));
      const size_t moved = count * sizeof(float) * blocks;
      const double algbw = moved / stats[0] / 1e9;
      if (r == 0) {
        printf(" %15s %12zu %12.2f %10.3f %10.3f %8.0f\n", c.name, moved, stats[0] * 1e6, algbw,
               algbw * c.bus_factor_num / n, stats[1]);
        fflush(stdout);
      }
      CHECK(stats[1] == 0, "%s at %zu bytes: %.0f wrong elements", c.name, moved, stats[1]);
    }
  }
  ncclMemFree(in);
  ncclMemFree(out);
  ncclMemFree(stat);
  CHECK_NCCL(ncclCommDestroy(comm));
}

// The last rank never calls: the others' init fails within the timeout and names it.
void scenario_missing(const Pipe &p, int n, int r, cudaStream_t) {
  ncclUniqueId id = share_id(p, r, n - 1);
  if (r == n - 1) {
    sleep(4);
    return;
  }
  setenv("COHORT_INIT_TIMEOUT", "1.5", 1);
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRank(&comm, n, id, r);
  const std::string who = "rank " + std::to_string(n - 1);
  CHECK(res == ncclRemoteError && strstr(ncclGetLastError(nullptr), who.c_str()),
        "init without rank %d: %s (%s)", n - 1, ncclGetErrorString(res),
        ncclGetLastError(nullptr));
  if (comm != nullptr) ncclCommDestroy(comm);
}

int run_rank(const std::string &scenario, const Pipe &p, int n, int r) {
  forked::g_rank = r;
  if (getenv("NCCL_API_TEST_FAKE_HOSTS") != nullptr) {
    setenv("COHORT_HOST_ID", ("h" + std::to_string(r)).c_str(), 1);
  }
  if (!g_cuda.start()) return 77;
  void *stream = nullptr;
  if (g_cuda.stream_create(&stream, 0) != 0) return 77;
  auto st = static_cast<cudaStream_t>(stream);
  if (scenario == "colls") scenario_colls(p, n, r, st);
  else if (scenario == "nonblocking") scenario_nonblocking(p, n, r, st);
  else if (scenario == "split") scenario_split(p, n, r, st);
  else if (scenario == "shrink") scenario_shrink(p, n, r, st);
  else if (scenario == "errors") scenario_errors(p, n, r, st);
  else if (scenario == "missing") scenario_missing(p, n, r, st);
  else if (scenario == "perf") scenario_perf(p, n, r, st);
  else return 2;
  return forked::g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <scenario> <ranks>\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  const int n = atoi(argv[2]);
  Pipe p;
  if (pipe(p.fds) != 0) return 2;
  return forked::run_forked(scenario + ", " + std::to_string(n) + " ranks", n, 150,
                            [&](int r) { return run_rank(scenario, p, n, r); });
}
