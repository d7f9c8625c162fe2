// The Open MPI component's per-call decisions, without MPI running: the memory rule with an
// injected detector (no CUDA driver here), the MPI type / op mapping, the collectives list.
#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

#include "core/build_info.h"
#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "ompi/coll_cohort.h"
#include "ompi/dispatch.h"
#include "ompi/memory_type.h"
#include "ompi/mpi_map.h"

namespace cohort::ompi {
namespace {

// Says what it was told for the addresses it knows, host for the rest.
class FakeDetector final : public MemoryTypeDetector {
 public:
  std::map<const void *, MemoryType> known;
  int queries = 0;
  bool gpu = false;
  bool thread_uses_gpu() override { return gpu; }
  MemoryType of(const void *buffer) override {
    ++queries;
    auto it = known.find(buffer);
    return it == known.end() ? MemoryType::kHost : it->second;
  }
};

TEST(OmpiDispatch, HostBuffersFallBackUnlessTheHostSwitchIsOn) {
  FakeDetector detector;
  double a = 0, b = 0;
  MemoryType type;
  EXPECT_EQ(memory_rule({&a, &b}, false, detector, &type), Fallback::kHostBuffer);
  EXPECT_EQ(type, MemoryType::kHost);
  EXPECT_EQ(memory_rule({&a, &b}, true, detector, &type), std::nullopt);
  EXPECT_EQ(type, MemoryType::kHost);
  EXPECT_EQ(detector.queries, 4);
}

TEST(OmpiDispatch, DeviceBuffersRunOnCohortWithTheHostSwitchOff) {
  FakeDetector detector;
  char device_send[8], device_recv[8];
  detector.known[device_send] = MemoryType::kDevice;
  detector.known[device_recv] = MemoryType::kDevice;
  MemoryType type;
  EXPECT_EQ(memory_rule({device_send, device_recv}, false, detector, &type), std::nullopt);
  EXPECT_EQ(type, MemoryType::kDevice);
  // MPI_IN_PLACE: only the receive buffer is looked at.
  EXPECT_EQ(memory_rule({nullptr, device_recv}, false, detector, &type), std::nullopt);
  EXPECT_EQ(type, MemoryType::kDevice);
}

TEST(OmpiDispatch, ManagedMemoryTakesTheDevicePath) {
  FakeDetector detector;
  char managed[8];
  detector.known[managed] = MemoryType::kManaged;
  MemoryType type;
  EXPECT_EQ(memory_rule({managed, managed}, false, detector, &type), std::nullopt);
  EXPECT_EQ(type, MemoryType::kManaged);
}

TEST(OmpiDispatch, MixedBuffersFallBackEvenWithTheHostSwitchOn) {
  FakeDetector detector;
  char device[8], host[8];
  detector.known[device] = MemoryType::kDevice;
  MemoryType type;
  EXPECT_EQ(memory_rule({device, host}, true, detector, &type), Fallback::kMixedMemory);
  EXPECT_EQ(memory_rule({host, device}, true, detector, &type), Fallback::kMixedMemory);
}

TEST(OmpiDispatch, OneBufferIsAskedAboutOnce) {
  FakeDetector detector;
  char device[8];
  detector.known[device] = MemoryType::kDevice;
  MemoryType type;
  EXPECT_EQ(memory_rule({device, device}, false, detector, &type), std::nullopt);
  EXPECT_EQ(detector.queries, 1);
}

TEST(OmpiDispatch, CallsWithoutBuffersFollowTheHostRule) {
  FakeDetector detector;
  MemoryType type;
  EXPECT_EQ(memory_rule({}, false, detector, &type), Fallback::kHostBuffer);
  EXPECT_EQ(memory_rule({}, true, detector, &type), std::nullopt);
  EXPECT_EQ(detector.queries, 0);
}

TEST(OmpiDispatch, TheTeamBindsAGpuOnlyWhenTheApplicationUsesOne) {
  FakeDetector detector;
  EXPECT_EQ(team_cuda_device(detector), COHORT_DEVICE_NONE);
  detector.gpu = true;
  EXPECT_EQ(team_cuda_device(detector), COHORT_DEVICE_CURRENT);
}

TEST(OmpiDispatch, TheInjectedDetectorReplacesTheDriverAndCanBeRemoved) {
  FakeDetector detector;
  int buffer = 0;
  detector.known[&buffer] = MemoryType::kDevice;
  set_memory_type_detector(&detector);
  EXPECT_EQ(memory_type_detector().of(&buffer), MemoryType::kDevice);
  set_memory_type_detector(nullptr);
  // The default: the CUDA driver where there is one (a stack variable is host memory to it),
  // everything host where there is none (this machine).
  EXPECT_EQ(memory_type_detector().of(&buffer), MemoryType::kHost);
}

// The real detector, on a machine with a GPU: the dlopen'd driver tells device, managed and
// host memory (pageable and pinned) apart, also inside an allocation.
TEST(OmpiDispatch, TheCudaDriverTellsDeviceManagedAndHostMemoryApart) {
#if !COHORT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU here (run unit_tests --gtest_filter='OmpiDispatch.*' on a GPU machine)";
  }
  void *device = nullptr, *managed = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 1 << 20), cudaSuccess);
  std::vector<char> pageable(1 << 20);
  MemoryTypeDetector &detector = memory_type_detector();
  EXPECT_EQ(detector.of(device), MemoryType::kDevice);
  EXPECT_EQ(detector.of(static_cast<char *>(device) + 12345), MemoryType::kDevice);
  EXPECT_EQ(detector.of(managed), MemoryType::kManaged);
  EXPECT_EQ(detector.of(pinned), MemoryType::kHost);
  EXPECT_EQ(detector.of(pageable.data()), MemoryType::kHost);
  EXPECT_TRUE(detector.thread_uses_gpu()) << "cudaMalloc made the primary context current";
  // A thread without a CUDA context is not asked about: its buffers count as host memory.
  std::thread([&] {
    EXPECT_FALSE(detector.thread_uses_gpu());
    EXPECT_EQ(detector.of(device), MemoryType::kHost);
  }).join();
  MemoryType type;
  EXPECT_EQ(memory_rule({device, device}, false, detector, &type), std::nullopt);
  EXPECT_EQ(memory_rule({pageable.data(), pageable.data()}, false, detector, &type),
            Fallback::kHostBuffer);
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

TEST(OmpiParams, TheCollectivesListPicksWhatTheModuleOffers) {
  coll_cohort_params_t p = {1, 40, 0, 0, "all"};
  EXPECT_EQ(coll_cohort_configure(&p), 0x7f);
  p.collectives = " allreduce ,barrier";
  EXPECT_EQ(coll_cohort_configure(&p), COLL_COHORT_ALLREDUCE | COLL_COHORT_BARRIER);
  p.collectives = "bcast,allgatherv";  // the unknown name is warned about and skipped
  EXPECT_EQ(coll_cohort_configure(&p), COLL_COHORT_BCAST);
  p.enable = 0;
  EXPECT_EQ(coll_cohort_configure(&p), 0);
}

}  // namespace
}  // namespace cohort::ompi
