// The public type helpers: Cohort element types and ops in MPI's terms, memory kinds.
#include <gtest/gtest.h>

#include <string>

#include "cohort_mpi.h"
#include "core/clock.h"
#include "core/cuda_driver.h"

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(DtypeToMpi, EveryStandardTypeHasItsMpiTwin) {
  const struct {
    cohort_dtype_t dtype;
    MPI_Datatype mpi;
  } expected[] = {{COHORT_INT8, MPI_INT8_T},   {COHORT_UINT8, MPI_UINT8_T},
                  {COHORT_INT32, MPI_INT32_T}, {COHORT_UINT32, MPI_UINT32_T},
                  {COHORT_INT64, MPI_INT64_T}, {COHORT_UINT64, MPI_UINT64_T},
                  {COHORT_FLOAT32, MPI_FLOAT}, {COHORT_FLOAT64, MPI_DOUBLE}};
  for (const auto &e : expected) {
    MPI_Datatype out = MPI_DATATYPE_NULL;
    EXPECT_EQ(cohort_dtype_to_mpi(e.dtype, &out), COHORT_SUCCESS) << e.dtype;
    EXPECT_EQ(out, e.mpi) << e.dtype;
  }
}

TEST(DtypeToMpi, HalfTypesAndBadValuesAreNamedAndLeaveTheOutputAlone) {
  for (cohort_dtype_t half : {COHORT_FLOAT16, COHORT_BFLOAT16}) {
    MPI_Datatype out = MPI_CHAR;
    EXPECT_EQ(cohort_dtype_to_mpi(half, &out), COHORT_ERR_NOT_SUPPORTED);
    EXPECT_EQ(out, MPI_CHAR);
    EXPECT_TRUE(contains(cohort_last_error(), "no standard MPI datatype")) << cohort_last_error();
  }
  MPI_Datatype out = MPI_CHAR;
  EXPECT_EQ(cohort_dtype_to_mpi(static_cast<cohort_dtype_t>(99), &out), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "dtype=99")) << cohort_last_error();
  EXPECT_EQ(out, MPI_CHAR);
  EXPECT_EQ(cohort_dtype_to_mpi(COHORT_INT8, nullptr), COHORT_ERR_INVALID_ARG);
}

TEST(OpToMpi, ReductionsMapAndAvgHasNone) {
  MPI_Op out = MPI_OP_NULL;
  EXPECT_EQ(cohort_op_to_mpi(COHORT_SUM, &out), COHORT_SUCCESS);
  EXPECT_EQ(out, MPI_SUM);
  EXPECT_EQ(cohort_op_to_mpi(COHORT_PROD, &out), COHORT_SUCCESS);
  EXPECT_EQ(out, MPI_PROD);
  EXPECT_EQ(cohort_op_to_mpi(COHORT_MIN, &out), COHORT_SUCCESS);
  EXPECT_EQ(out, MPI_MIN);
  EXPECT_EQ(cohort_op_to_mpi(COHORT_MAX, &out), COHORT_SUCCESS);
  EXPECT_EQ(out, MPI_MAX);
  EXPECT_EQ(cohort_op_to_mpi(COHORT_AVG, &out), COHORT_ERR_NOT_SUPPORTED);
  EXPECT_EQ(out, MPI_MAX);
  EXPECT_EQ(cohort_op_to_mpi(static_cast<cohort_op_t>(-1), &out), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "op=-1")) << cohort_last_error();
}

class FakeDetector : public cohort::MemoryKindDetector {
 public:
  cohort_memory_kind_t kind_of(const void *buffer) override {
    return buffer == device_ ? COHORT_MEMORY_CUDA_DEVICE : COHORT_MEMORY_HOST;
  }
  bool thread_has_context() override { return true; }
  const void *device_ = nullptr;
};

TEST(MemoryKind, AnswersThroughTheDetectorAndNamesEveryKind) {
  FakeDetector fake;
  int device_word = 0, host_word = 0;
  fake.device_ = &device_word;
  cohort::set_memory_kind_detector(&fake);
  cohort_memory_kind_t kind = COHORT_MEMORY_CUDA_HOST;
  EXPECT_EQ(cohort_memory_kind(&device_word, &kind), COHORT_SUCCESS);
  EXPECT_EQ(kind, COHORT_MEMORY_CUDA_DEVICE);
  EXPECT_EQ(cohort_memory_kind(&host_word, &kind), COHORT_SUCCESS);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
  EXPECT_EQ(cohort_memory_kind(&host_word, nullptr), COHORT_ERR_INVALID_ARG);
  cohort::set_memory_kind_detector(nullptr);
  // Without a CUDA context on this thread (none here) everything is host memory.
  EXPECT_EQ(cohort_memory_kind(&device_word, &kind), COHORT_SUCCESS);
  EXPECT_EQ(kind, COHORT_MEMORY_HOST);
  EXPECT_STREQ(cohort_memory_kind_name(COHORT_MEMORY_HOST), "host");
  EXPECT_STREQ(cohort_memory_kind_name(COHORT_MEMORY_CUDA_HOST), "cuda-host");
  EXPECT_STREQ(cohort_memory_kind_name(COHORT_MEMORY_CUDA_MANAGED), "cuda-managed");
  EXPECT_STREQ(cohort_memory_kind_name(COHORT_MEMORY_CUDA_DEVICE), "cuda-device");
  EXPECT_STREQ(cohort_memory_kind_name(COHORT_NUM_MEMORY_KINDS), "invalid");
}

}  // namespace

// A counting detector: how often the driver would have been asked.
class CountingDetector : public FakeDetector {
 public:
  cohort_memory_kind_t kind_of(const void *buffer) override {
    ++asked_;
    return FakeDetector::kind_of(buffer);
  }
  int asked_ = 0;
};

TEST(MemoryKind, ACollectiveRightAfterTheQueryTakesItsAnswerAndALaterOneAsksAgain) {
  CountingDetector counting;
  int device_word = 0, other = 0;
  counting.device_ = &device_word;
  cohort::set_memory_kind_detector(&counting);
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  ASSERT_EQ(cohort_memory_kind(&device_word, &kind), COHORT_SUCCESS);
  EXPECT_EQ(counting.asked_, 1);
  EXPECT_EQ(cohort::place_of_recent(&device_word).kind, COHORT_MEMORY_CUDA_DEVICE);
  EXPECT_EQ(counting.asked_, 1);  // taken from the answer just given
  EXPECT_EQ(cohort::place_of_recent(&other).kind, COHORT_MEMORY_HOST);
  EXPECT_EQ(counting.asked_, 2);  // never asked about: the detector
  // Past the window the driver is asked again: the memory may have been freed and reused.
  const int64_t start = cohort::now_ns();
  while (cohort::now_ns() - start < cohort::kRecentKindNs + 1000) {
  }
  counting.device_ = &other;  // as if the address now held another kind
  EXPECT_EQ(cohort::place_of_recent(&device_word).kind, COHORT_MEMORY_HOST);
  EXPECT_EQ(counting.asked_, 3);
  // A detector injected after the answer is not bypassed.
  ASSERT_EQ(cohort_memory_kind(&other, &kind), COHORT_SUCCESS);
  FakeDetector replaced;
  cohort::set_memory_kind_detector(&replaced);
  EXPECT_EQ(cohort::place_of_recent(&other).kind, COHORT_MEMORY_HOST);
  cohort::set_memory_kind_detector(nullptr);
}
