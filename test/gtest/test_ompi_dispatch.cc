// The Open MPI component's per-call decisions, without MPI running: the memory rule with an
// injected memory-kind function (and with Cohort's own, on a GPU where there is one), the MPI
// type / op mapping, the collectives list, the output and its levels.
#include <gtest/gtest.h>

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
  cohort_memory_kind_t kind = COHORT_NUM_MEMORY_KINDS;
};

TEST_F(OmpiDispatch, HostBuffersFallBackUnlessTheHostSwitchIsOn) {
  double a = 0, b = 0;
  EXPECT_EQ(memory_rule({&a, &b}, false, fake_kind, &kind), Fallback::kHostBuffer);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
  EXPECT_EQ(memory_rule({&a, &b}, true, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
  EXPECT_EQ(g_queries, 4);
}

TEST_F(OmpiDispatch, DeviceBuffersRunOnCohortWithTheHostSwitchOff) {
  char device_send[8], device_recv[8];
  g_known[device_send] = COHORT_MEMORY_CUDA_DEVICE;
  g_known[device_recv] = COHORT_MEMORY_CUDA_DEVICE;
  EXPECT_EQ(memory_rule({device_send, device_recv}, false, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_DEVICE);
  // MPI_IN_PLACE: only the receive buffer is looked at.
  EXPECT_EQ(memory_rule({nullptr, device_recv}, false, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_DEVICE);
}

TEST_F(OmpiDispatch, ManagedMemoryTakesTheDevicePath) {
  char managed[8];
  g_known[managed] = COHORT_MEMORY_CUDA_MANAGED;
  EXPECT_EQ(memory_rule({managed, managed}, false, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_MANAGED);
}

TEST_F(OmpiDispatch, PinnedHostMemoryIsHostMemory) {
  char pinned[8], pageable[8];
  g_known[pinned] = COHORT_MEMORY_CUDA_HOST;
  EXPECT_EQ(memory_rule({pinned, pinned}, false, fake_kind, &kind), Fallback::kHostBuffer);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
  // Pinned and pageable buffers in one call are not a mix of kinds.
  EXPECT_EQ(memory_rule({pinned, pageable}, true, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
}

TEST_F(OmpiDispatch, MixedBuffersFallBackEvenWithTheHostSwitchOn) {
  char device[8], host[8], managed[8];
  g_known[device] = COHORT_MEMORY_CUDA_DEVICE;
  g_known[managed] = COHORT_MEMORY_CUDA_MANAGED;
  EXPECT_EQ(memory_rule({device, host}, true, fake_kind, &kind), Fallback::kMixedMemory);
  EXPECT_EQ(memory_rule({host, device}, true, fake_kind, &kind), Fallback::kMixedMemory);
  EXPECT_EQ(memory_rule({device, managed}, true, fake_kind, &kind), Fallback::kMixedMemory);
}

TEST_F(OmpiDispatch, OneBufferIsAskedAboutOnce) {
  char device[8];
  g_known[device] = COHORT_MEMORY_CUDA_DEVICE;
  EXPECT_EQ(memory_rule({device, device}, false, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(g_queries, 1);
}

TEST_F(OmpiDispatch, CallsWithoutBuffersFollowTheHostRule) {
  EXPECT_EQ(memory_rule({}, false, fake_kind, &kind), Fallback::kHostBuffer);
  EXPECT_EQ(memory_rule({}, true, fake_kind, &kind), std::nullopt);
  EXPECT_EQ(g_queries, 0);
}

TEST_F(OmpiDispatch, ABufferWhoseKindCannotBeToldIsHostMemory) {
  char buffer[8];
  EXPECT_EQ(memory_rule({buffer, buffer}, false, failing_kind, &kind), Fallback::kHostBuffer);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
}

// Cohort's own cohort_memory_kind behind the rule: everything is host memory without a GPU
// (or on a thread without a CUDA context); on a GPU machine device, managed, pinned and
// pageable memory take their paths.
TEST_F(OmpiDispatch, CohortsMemoryKindDecidesTheRule) {
  std::vector<char> pageable(1 << 20);
  EXPECT_EQ(memory_rule({pageable.data(), pageable.data()}, false, cohort_memory_kind, &kind),
            Fallback::kHostBuffer);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
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
  EXPECT_EQ(memory_rule({device, inside}, false, cohort_memory_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_DEVICE);
  EXPECT_EQ(memory_rule({managed, managed}, false, cohort_memory_kind, &kind), std::nullopt);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_MANAGED);
  EXPECT_EQ(memory_rule({pinned, pinned}, false, cohort_memory_kind, &kind), Fallback::kHostBuffer);
  EXPECT_EQ(memory_rule({pinned, pageable.data()}, true, cohort_memory_kind, &kind), std::nullopt);
  EXPECT_EQ(memory_rule({device, pinned}, true, cohort_memory_kind, &kind), Fallback::kMixedMemory);
  // A thread without a CUDA context is not asked about: its buffers count as host memory.
  std::thread([&] {
    cohort_memory_kind_t other = COHORT_NUM_MEMORY_KINDS;
    EXPECT_EQ(memory_rule({device, device}, false, cohort_memory_kind, &other),
              Fallback::kHostBuffer);
  }).join();
  cudaFree(device);
  cudaFree(managed);
  cudaFreeHost(pinned);
#endif
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
  EXPECT_EQ(coll_cohort_configure(&p, capture), 0x7f);
  p.collectives = " allreduce ,barrier";
  EXPECT_EQ(coll_cohort_configure(&p, capture), COLL_COHORT_ALLREDUCE | COLL_COHORT_BARRIER);
  EXPECT_TRUE(g_said.empty());
  p.collectives = "bcast,allgatherv";  // the unknown name is warned about and skipped
  EXPECT_EQ(coll_cohort_configure(&p, capture), COLL_COHORT_BCAST);
  ASSERT_EQ(g_said.size(), 1u);
  EXPECT_EQ(g_said[0].first, kWarning);
  EXPECT_EQ(g_said[0].second.rfind("coll:cohort: coll_cohort_collectives names 'allgatherv'", 0),
            0u)
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
