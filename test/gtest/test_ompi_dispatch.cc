// The Open MPI component's per-call decisions, without MPI running: the memory rule with an
// injected memory-kind function (and with Cohort's own, on a GPU where there is one), the MPI
// type / op mapping, the collectives list, the output and its levels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/build_info.h"
#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "ompi/coll_cohort.h"
#include "ompi/component.h"
#include "ompi/dispatch.h"
#include "ompi/mpi_map.h"

namespace cohort::ompi {
namespace {

// A memory-kind function for the rule: what the test told it for the addresses it knows, host
// memory for the rest; it counts its queries.
std::map<const void *, cohort_memory_kind_t> g_known;
int g_queries = 0;

cohort_status_t fake_kind(const void *ptr, cohort_memory_kind_t *kind) {
  ++g_queries;
  auto it = g_known.find(ptr);
  *kind = it == g_known.end() ? COHORT_MEMORY_HOST : it->second;
  return COHORT_SUCCESS;
}

cohort_status_t failing_kind(const void *, cohort_memory_kind_t *) {
  return COHORT_ERR_INVALID_ARG;
}

class OmpiDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    g_known.clear();
    g_queries = 0;
  }
  static Placement where(std::vector<const void *> buffers, MemoryKindFn kind_of = fake_kind) {
    return placement(buffers.data(), static_cast<int>(buffers.size()), kind_of);
  }
};

TEST_F(OmpiDispatch, HostBuffersAreHostMemoryAndEachIsAskedAbout) {
  double a = 0, b = 0;
  EXPECT_EQ(where({&a, &b}), Placement::kHost);
  EXPECT_EQ(g_queries, 2);
}

TEST_F(OmpiDispatch, DeviceBuffersAreOnTheGpu) {
  char device_send[8], device_recv[8];
  g_known[device_send] = COHORT_MEMORY_CUDA_DEVICE;
  g_known[device_recv] = COHORT_MEMORY_CUDA_DEVICE;
  EXPECT_EQ(where({device_send, device_recv}), Placement::kDevice);
  EXPECT_EQ(where({device_recv}), Placement::kDevice);  // MPI_IN_PLACE: one buffer
}

// Cohort runs its host algorithms on managed memory and its GPU kernels on device memory: a
// rank with managed buffers counted "on the GPU" would run the host's schedule while ranks with
// device buffers ran kernels, and each would wait for the other.  Managed memory is host memory
// to the route (the CPU reads it), and with device memory it is a mix, staged.
TEST_F(OmpiDispatch, ManagedMemoryIsHostMemoryAndWithDeviceMemoryAMix) {
  char device[8], managed[8], other_managed[8];
  g_known[device] = COHORT_MEMORY_CUDA_DEVICE;
  g_known[managed] = COHORT_MEMORY_CUDA_MANAGED;
  g_known[other_managed] = COHORT_MEMORY_CUDA_MANAGED;
  EXPECT_EQ(where({managed}), Placement::kHost);
  EXPECT_EQ(where({managed, other_managed}), Placement::kHost);
  EXPECT_EQ(where({device, managed}), Placement::kMixed);
  EXPECT_EQ(where({managed, device}), Placement::kMixed);
}

TEST_F(OmpiDispatch, PinnedHostMemoryIsHostMemory) {
  char pinned[8], pageable[8];
  g_known[pinned] = COHORT_MEMORY_CUDA_HOST;
  EXPECT_EQ(where({pinned, pinned}), Placement::kHost);
  EXPECT_EQ(where({pinned, pageable}), Placement::kHost);
}

TEST_F(OmpiDispatch, DeviceMemoryWithHostMemoryIsMixed) {
  char device[8], host[8], pinned[8], managed[8];
  g_known[device] = COHORT_MEMORY_CUDA_DEVICE;
  g_known[pinned] = COHORT_MEMORY_CUDA_HOST;
  g_known[managed] = COHORT_MEMORY_CUDA_MANAGED;
  EXPECT_EQ(where({device, host}), Placement::kMixed);
  EXPECT_EQ(where({host, device}), Placement::kMixed);
  EXPECT_EQ(where({pinned, device}), Placement::kMixed);
  // Managed memory is readable by the CPU: with host memory it runs as host memory.
  EXPECT_EQ(where({managed, host}), Placement::kHost);
}

TEST_F(OmpiDispatch, CallsWithoutBuffersAreHostCalls) {
  EXPECT_EQ(where({}), Placement::kHost);
  EXPECT_EQ(g_queries, 0);
}

TEST_F(OmpiDispatch, ABufferWhoseKindCannotBeToldIsHostMemory) {
  char buffer[8];
  EXPECT_EQ(where({buffer, buffer}, failing_kind), Placement::kHost);
}

TEST_F(OmpiDispatch, EveryKindHasAnMpiNameBlockingAndNot) {
  EXPECT_STREQ(coll_mpi_name(COLL_COHORT_ALLREDUCE, false), "MPI_Allreduce");
  EXPECT_STREQ(coll_mpi_name(COLL_COHORT_ALLREDUCE, true), "MPI_Iallreduce");
  EXPECT_STREQ(coll_mpi_name(COLL_COHORT_REDUCE_SCATTER, true), "MPI_Ireduce_scatter");
  EXPECT_STREQ(coll_mpi_name(COLL_COHORT_EXSCAN, false), "MPI_Exscan");
  for (int k = 0; k < COLL_COHORT_NUM_KINDS; ++k) {
    const auto kind = static_cast<coll_cohort_kind_t>(k);
    std::string blocking = coll_mpi_name(kind, false);
    ASSERT_EQ(blocking.rfind("MPI_", 0), 0u) << k;
    std::string stem = blocking.substr(4);
    stem[0] = static_cast<char>(std::tolower(stem[0]));
    EXPECT_EQ(coll_mpi_name(kind, true), "MPI_I" + stem) << k;
  }
  EXPECT_STREQ(coll_mpi_name(COLL_COHORT_NUM_KINDS, false), "?");
}

// Cohort's own cohort_memory_kind behind the rule: everything is host memory without a GPU
// (or on a thread without a CUDA context); on a GPU machine device, managed, pinned and
// pageable memory take their paths.
TEST_F(OmpiDispatch, CohortsMemoryKindDecidesThePlacement) {
  std::vector<char> pageable(1 << 20);
  EXPECT_EQ(where({pageable.data(), pageable.data()}, cohort_memory_kind), Placement::kHost);
#if !COHORT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: only pageable host memory checked";
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU here: only pageable host memory checked (run unit_tests "
                    "--gtest_filter='Ompi*' on a GPU machine)";
  }
  void *device = nullptr, *managed = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 1 << 20), cudaSuccess);
  char *inside = static_cast<char *>(device) + 12345;
  EXPECT_EQ(where({device, inside}, cohort_memory_kind), Placement::kDevice);
  EXPECT_EQ(where({managed, managed}, cohort_memory_kind), Placement::kHost);
  EXPECT_EQ(where({device, managed}, cohort_memory_kind), Placement::kMixed);
  EXPECT_EQ(where({pinned, pageable.data()}, cohort_memory_kind), Placement::kHost);
  EXPECT_EQ(where({device, pinned}, cohort_memory_kind), Placement::kMixed);
  // A thread without a CUDA context is not asked about: its buffers count as host memory.
  std::thread([&] {
    EXPECT_EQ(where({device, device}, cohort_memory_kind), Placement::kHost);
  }).join();
  // Staging's copies: device to pinned to pageable and back, byte for byte.
  std::vector<char> source(1000), back(1000);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>(i * 7);
  void *staging = nullptr;
  ASSERT_EQ(cohort_host_alloc(source.size(), &staging), COHORT_SUCCESS);
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  EXPECT_EQ(cohort_memory_kind(staging, &kind), COHORT_SUCCESS);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_HOST);
  EXPECT_EQ(cohort_memcpy(inside, source.data(), source.size()), COHORT_SUCCESS);
  EXPECT_EQ(cohort_memcpy(staging, inside, source.size()), COHORT_SUCCESS);
  EXPECT_EQ(cohort_memcpy(back.data(), staging, source.size()), COHORT_SUCCESS);
  EXPECT_EQ(back, source);
  EXPECT_EQ(cohort_host_free(staging), COHORT_SUCCESS);
  cudaFree(device);
  cudaFree(managed);
  cudaFreeHost(pinned);
#endif
}

// Without a CUDA context the staging calls are malloc, memcpy and free, and say what is wrong.
TEST(OmpiStaging, HostAllocCopyAndFreeWithoutAGpu) {
  void *p = nullptr;
  ASSERT_EQ(cohort_host_alloc(64, &p), COHORT_SUCCESS);
  ASSERT_NE(p, nullptr);
  const char text[] = "staged";
  EXPECT_EQ(cohort_memcpy(p, text, sizeof text), COHORT_SUCCESS);
  EXPECT_STREQ(static_cast<const char *>(p), "staged");
  EXPECT_EQ(cohort_memcpy(p, nullptr, 1), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(std::string(cohort_last_error()).find("cohort_memcpy: src is NULL"), std::string::npos);
  EXPECT_EQ(cohort_memcpy(nullptr, nullptr, 0), COHORT_SUCCESS);  // nothing to copy
  EXPECT_EQ(cohort_host_free(p), COHORT_SUCCESS);
  EXPECT_EQ(cohort_host_alloc(64, nullptr), COHORT_ERR_INVALID_ARG);
  void *none = &p;
  EXPECT_EQ(cohort_host_alloc(0, &none), COHORT_SUCCESS);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(cohort_host_free(nullptr), COHORT_SUCCESS);
}

// Without a driver or a context there is no device memory to give: a named error, no pointer.
TEST(OmpiStaging, DeviceAllocWithoutAContextSaysWhy) {
  std::thread([] {  // a new thread has no current context, on a GPU machine too
    void *p = &p;
    EXPECT_EQ(cohort_device_alloc(64, &p), COHORT_ERR_CUDA);
    EXPECT_EQ(p, nullptr);
    const std::string error = cohort_last_error();
    EXPECT_NE(error.find("cohort_device_alloc"), std::string::npos) << error;
    EXPECT_EQ(cohort_device_alloc(64, nullptr), COHORT_ERR_INVALID_ARG);
    void *none = &none;
    EXPECT_EQ(cohort_device_alloc(0, &none), COHORT_SUCCESS);
    EXPECT_EQ(none, nullptr);
    EXPECT_EQ(cohort_device_free(nullptr), COHORT_SUCCESS);
  })
      .join();
}

// The route memo: which calls skip the agreement, and what they take.
struct Asked {
  int agreements = 0;
  std::vector<bool> routes;
};
// Runs `outcomes` (each call's agreed answer, were it asked) through a memo under one key.
Asked run_memo(RouteMemo &memo, int key, const std::vector<bool> &outcomes) {
  Asked out;
  for (bool outcome : outcomes) {
    std::optional<bool> known = memo.recall(key);
    if (!known) {
      ++out.agreements;
      memo.learn(key, outcome);
      known = outcome;
    }
    out.routes.push_back(*known);
  }
  return out;
}

TEST(OmpiRouteMemo, RepeatedOutcomesSkipMoreAgreementsUpToTheLimit) {
  RouteMemo memo;
  const int key = RouteMemo::key(COLL_COHORT_ALLREDUCE, 8);
  // Agreements at calls 0, 1, 3, 6, 11, 20, 37, 70 (each skipping twice as many calls as the
  // last), then at every 65th: 135, 200, ..., 980.
  Asked a = run_memo(memo, key, std::vector<bool>(1000, true));
  EXPECT_EQ(a.agreements, 8 + 14);
  EXPECT_EQ(a.routes, std::vector<bool>(1000, true));
}

TEST(OmpiRouteMemo, AChangedOutcomeIsAskedAgainAtTheNextCall) {
  RouteMemo memo;
  const int key = RouteMemo::key(COLL_COHORT_BCAST, 4096);
  run_memo(memo, key, std::vector<bool>(200, true));  // skipping 64 at a time now
  // The next agreement sees host memory somewhere: from there every call asks until the
  // outcome repeats, and the skipped calls in between kept the GPU route (they stage).
  Asked a = run_memo(memo, key, std::vector<bool>(70, false));
  EXPECT_LE(a.agreements, 7);
  EXPECT_GE(a.agreements, 2);
  const auto first_host = std::find(a.routes.begin(), a.routes.end(), false) - a.routes.begin();
  EXPECT_LE(first_host, 64);
  EXPECT_TRUE(std::all_of(a.routes.begin() + first_host, a.routes.begin() + first_host + 2,
                          [](bool r) { return !r; }));
  // Alternating outcomes never repeat: every call agrees.
  RouteMemo fresh;
  std::vector<bool> alternating;
  for (int i = 0; i < 50; ++i) alternating.push_back(i % 2 == 0);
  Asked b = run_memo(fresh, key, alternating);
  EXPECT_EQ(b.agreements, 50);
  EXPECT_EQ(b.routes, alternating);
}

TEST(OmpiRouteMemo, ACacheSyncIsAskedAgainAtTheNextCall) {
  RouteMemo memo;
  const int key = RouteMemo::key(COLL_COHORT_ALLREDUCE, 256 << 20);
  run_memo(memo, key, std::vector<bool>(200, true));  // skipping 64 at a time now
  while (memo.recall(key)) {
  }
  // The agreement that found a rank with buffers for the registration cache synced it there:
  // the same route, but the next call asks again (more buffers may wait), then the skips grow
  // anew from one.
  memo.learn(key, true, /*settled=*/false);
  EXPECT_FALSE(memo.recall(key).has_value());
  memo.learn(key, true);
  EXPECT_EQ(memo.recall(key), std::optional<bool>(true));
  EXPECT_FALSE(memo.recall(key).has_value());
  // Settled, the same outcome as before a sync: the skips would have doubled instead.
  RouteMemo settled;
  run_memo(settled, key, std::vector<bool>(4, true));  // agreements at 0, 1, 3
  int skipped = 0;
  while (settled.recall(key)) ++skipped;
  settled.learn(key, true);
  while (settled.recall(key)) ++skipped;
  EXPECT_EQ(skipped, 2 + 4);
}

TEST(OmpiRouteMemo, KeysOfOtherCollectivesAndSizesAreApart) {
  RouteMemo memo;
  const int small = RouteMemo::key(COLL_COHORT_ALLREDUCE, 8);
  const int large = RouteMemo::key(COLL_COHORT_ALLREDUCE, 64 << 20);
  const int other = RouteMemo::key(COLL_COHORT_REDUCE, 8);
  EXPECT_NE(small, large);
  EXPECT_NE(small, other);
  EXPECT_EQ(small, RouteMemo::key(COLL_COHORT_ALLREDUCE, 12));  // one size class: 8..15 bytes
  run_memo(memo, large, std::vector<bool>(100, true));
  EXPECT_FALSE(memo.recall(small).has_value());
  EXPECT_FALSE(memo.recall(other).has_value());
  EXPECT_TRUE(memo.recall(large).has_value());
}

int fake_type_size(MPI_Datatype type, int *size) {
  *size = type == MPI_DOUBLE ? 8 : 4;
  return MPI_SUCCESS;
}

TEST(OmpiRouteMemo, TheKeysByteCountIsOneEveryRankPasses) {
  coll_cohort_args_t a{};
  a.kind = COLL_COHORT_ALLREDUCE;
  a.count = 1000;
  a.dtype = MPI_DOUBLE;
  a.rcount = 7;  // ignored by a reduction
  EXPECT_EQ(uniform_bytes(a, fake_type_size), 8000u);
  a.kind = COLL_COHORT_ALLGATHER;  // the receive block: given in place too
  a.sbuf = MPI_IN_PLACE;
  a.rdtype = MPI_INT;
  EXPECT_EQ(uniform_bytes(a, fake_type_size), 28u);
  for (auto kind : {COLL_COHORT_ALLGATHERV, COLL_COHORT_ALLTOALLV, COLL_COHORT_GATHER,
                    COLL_COHORT_SCATTERV, COLL_COHORT_BARRIER, COLL_COHORT_REDUCE_SCATTER}) {
    a.kind = kind;
    EXPECT_EQ(uniform_bytes(a, fake_type_size), 0u) << coll_mpi_name(kind, false);
  }
  a.kind = COLL_COHORT_BCAST;
  a.count = -1;
  EXPECT_EQ(uniform_bytes(a, fake_type_size), 0u);
}

TEST(OmpiMpiMap, EveryTypeCohortMapsToMpiMapsBack) {
  int mapped = 0;
  for (int d = 0; d < COHORT_NUM_DTYPES; ++d) {
    const auto dtype = static_cast<cohort_dtype_t>(d);
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    if (cohort_dtype_to_mpi(dtype, &datatype) != COHORT_SUCCESS) continue;
    EXPECT_EQ(reduction_dtype(datatype), dtype) << "dtype " << d;
    ++mapped;
  }
  EXPECT_EQ(mapped, COHORT_NUM_DTYPES - 2);  // all but fp16 and bf16
}

TEST(OmpiMpiMap, PredefinedCTypesMapToCohortTypesBySizeAndSign) {
  EXPECT_EQ(reduction_dtype(MPI_FLOAT), COHORT_FLOAT32);
  EXPECT_EQ(reduction_dtype(MPI_DOUBLE), COHORT_FLOAT64);
  EXPECT_EQ(reduction_dtype(MPI_INT), COHORT_INT32);
  EXPECT_EQ(reduction_dtype(MPI_UNSIGNED), COHORT_UINT32);
  EXPECT_EQ(reduction_dtype(MPI_INT8_T), COHORT_INT8);
  EXPECT_EQ(reduction_dtype(MPI_SIGNED_CHAR), COHORT_INT8);
  EXPECT_EQ(reduction_dtype(MPI_UNSIGNED_CHAR), COHORT_UINT8);
  EXPECT_EQ(reduction_dtype(MPI_LONG_LONG), COHORT_INT64);
  EXPECT_EQ(reduction_dtype(MPI_UNSIGNED_LONG_LONG), COHORT_UINT64);
  EXPECT_EQ(reduction_dtype(MPI_UINT64_T), COHORT_UINT64);
  EXPECT_EQ(reduction_dtype(MPI_LONG), sizeof(long) == 8 ? COHORT_INT64 : COHORT_INT32);
}

TEST(OmpiMpiMap, TypesAndOpsCohortLacksHaveNoMapping) {
  EXPECT_EQ(reduction_dtype(MPI_SHORT), std::nullopt);
  EXPECT_EQ(reduction_dtype(MPI_UINT16_T), std::nullopt);
  EXPECT_EQ(reduction_dtype(MPI_DOUBLE_INT), std::nullopt);
  EXPECT_EQ(reduction_dtype(MPI_LONG_DOUBLE), std::nullopt);
  EXPECT_EQ(reduction_dtype(MPI_CHAR), std::nullopt);
  EXPECT_EQ(reduction_op(MPI_SUM), COHORT_SUM);
  EXPECT_EQ(reduction_op(MPI_PROD), COHORT_PROD);
  EXPECT_EQ(reduction_op(MPI_MIN), COHORT_MIN);
  EXPECT_EQ(reduction_op(MPI_MAX), COHORT_MAX);
  EXPECT_EQ(reduction_op(MPI_MAXLOC), std::nullopt);
  EXPECT_EQ(reduction_op(MPI_BAND), std::nullopt);
  EXPECT_EQ(reduction_op(MPI_REPLACE), std::nullopt);
}

// What the logic said, level and text, through the output function the glue would pass.
std::vector<std::pair<int, std::string>> g_said;
void capture(int level, const char *text) { g_said.emplace_back(level, text); }

class OmpiComponent : public ::testing::Test {
 protected:
  void SetUp() override { g_said.clear(); }
  void TearDown() override { coll_cohort_configure(&defaults, nullptr); }
  const coll_cohort_params_t defaults = COLL_COHORT_PARAMS_DEFAULT;
};

TEST_F(OmpiComponent, TheCollectivesListPicksWhatTheModuleOffers) {
  coll_cohort_params_t p = COLL_COHORT_PARAMS_DEFAULT;
  EXPECT_EQ(coll_cohort_configure(&p, capture), (1 << COLL_COHORT_NUM_KINDS) - 1);
  p.collectives = " allreduce ,barrier";
  EXPECT_EQ(coll_cohort_configure(&p, capture),
            (1 << COLL_COHORT_ALLREDUCE) | (1 << COLL_COHORT_BARRIER));
  EXPECT_TRUE(g_said.empty());
  p.collectives = "bcast,alltoallw,exscan";  // the unknown name is warned about and skipped
  EXPECT_EQ(coll_cohort_configure(&p, capture),
            (1 << COLL_COHORT_BCAST) | (1 << COLL_COHORT_EXSCAN));
  ASSERT_EQ(g_said.size(), 1u);
  EXPECT_EQ(g_said[0].first, kWarning);
  EXPECT_EQ(g_said[0].second.rfind("coll:cohort: coll_cohort_collectives names 'alltoallw'", 0), 0u)
      << g_said[0].second;
  p.enable = false;
  EXPECT_EQ(coll_cohort_configure(&p, capture), 0);
}

TEST_F(OmpiComponent, AnInitTimeoutThatIsNotPositiveIsWarnedAboutAndReplaced) {
  coll_cohort_params_t p = COLL_COHORT_PARAMS_DEFAULT;
  p.init_timeout = 2.5;
  coll_cohort_configure(&p, capture);
  EXPECT_EQ(params().init_timeout, 2.5);
  EXPECT_TRUE(g_said.empty());
  p.init_timeout = 0;
  coll_cohort_configure(&p, capture);
  EXPECT_EQ(params().init_timeout, defaults.init_timeout);
  ASSERT_EQ(g_said.size(), 1u);
  EXPECT_EQ(g_said[0].first, kWarning);
  EXPECT_NE(g_said[0].second.find("coll_cohort_init_timeout must be a positive number"),
            std::string::npos)
      << g_said[0].second;
}

TEST_F(OmpiComponent, MessagesReachTheOutputUpToTheVerboseLevel) {
  coll_cohort_params_t p = COLL_COHORT_PARAMS_DEFAULT;
  p.verbose = kFirstFallback;
  coll_cohort_configure(&p, capture);
  EXPECT_TRUE(shown(kWarning) && shown(kSummary) && shown(kFirstFallback));
  EXPECT_FALSE(shown(kEveryCall));
  say(kWarning, "w %d", 1);
  say(kSummary, "s %s", "x");
  say(kFirstFallback, "f");
  say(kEveryCall, "every call: not shown at verbose 2");
  const std::vector<std::pair<int, std::string>> want = {{kWarning, "coll:cohort: w 1"},
                                                         {kSummary, "coll:cohort: s x"},
                                                         {kFirstFallback, "coll:cohort: f"}};
  EXPECT_EQ(g_said, want);
  p.verbose = 0;  // quiet: warnings only
  coll_cohort_configure(&p, capture);
  g_said.clear();
  say(kSummary, "summary: not shown at verbose 0");
  say(kWarning, "%s", std::string(3000, 'x').c_str());  // long texts are not cut
  ASSERT_EQ(g_said.size(), 1u);
  EXPECT_EQ(g_said[0].second.size(), 13u + 3000u);
}

}  // namespace
}  // namespace cohort::ompi
