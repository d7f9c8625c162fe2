// The host executor running every algorithm for real: one thread per rank, shared-memory
// mailboxes (in this process's heap) as channels, real dtypes and the CPU reductions.  Small
// mailboxes force wrap-around and back-pressure in every message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "coll/schedule.h"
#include "core/clock.h"
#include "coll/dtype.h"
#include "coll/host_execution.h"
#include "coll/half.h"
#include "tl_host/mailbox.h"

namespace cohort::tl_host {
namespace {

using namespace coll;  // dtypes and ops

// n x n mailboxes (from, to) in one aligned block, and their two ends.
class Mesh {
 public:
  Mesh(int n, size_t capacity) : n_(n), stride_(Mailbox::bytes_for(capacity)) {
    memory_ = std::aligned_alloc(Mailbox::kAlign, stride_ * n * n);
    for (int i = 0; i < n * n; ++i) {
      char *at = static_cast<char *>(memory_) + stride_ * i;
      EXPECT_EQ(Mailbox::init(at, capacity), COHORT_SUCCESS);
      writers_.push_back(std::make_unique<MailboxWriter>(at));
      readers_.push_back(std::make_unique<MailboxReader>(at));
    }
  }
  ~Mesh() { std::free(memory_); }

  // Single copy between the threads: this process reads its own memory.
  void enable_references(size_t min_bytes) {
    for (auto &w : writers_) w->enable_references(min_bytes);
    for (auto &r : readers_) r->enable_references(min_bytes, getpid());
  }

  std::vector<PeerChannels> channels_of(int rank) {
    std::vector<PeerChannels> peers(n_);
    for (int p = 0; p < n_; ++p) {
      if (p == rank) continue;
      peers[p].to = writers_[rank * n_ + p].get();
      peers[p].from = readers_[p * n_ + rank].get();
    }
    return peers;
  }

 private:
  int n_;
  size_t stride_;
  void *memory_;
  std::vector<std::unique_ptr<MailboxWriter>> writers_;
  std::vector<std::unique_ptr<MailboxReader>> readers_;
};

// Small integers in every dtype, so that every reduction is exact and comparable bit for bit.
void put(cohort_dtype_t dtype, void *buffer, size_t i, long v) {
  switch (dtype) {
    case COHORT_INT8: static_cast<int8_t *>(buffer)[i] = static_cast<int8_t>(v); break;
    case COHORT_UINT8: static_cast<uint8_t *>(buffer)[i] = static_cast<uint8_t>(v); break;
    case COHORT_INT32: static_cast<int32_t *>(buffer)[i] = static_cast<int32_t>(v); break;
    case COHORT_UINT32: static_cast<uint32_t *>(buffer)[i] = static_cast<uint32_t>(v); break;
    case COHORT_INT64: static_cast<int64_t *>(buffer)[i] = v; break;
    case COHORT_UINT64: static_cast<uint64_t *>(buffer)[i] = static_cast<uint64_t>(v); break;
    case COHORT_FLOAT16:
      static_cast<uint16_t *>(buffer)[i] = float_to_fp16(static_cast<float>(v));
      break;
    case COHORT_BFLOAT16:
      static_cast<uint16_t *>(buffer)[i] = float_to_bf16(static_cast<float>(v));
      break;
    case COHORT_FLOAT32: static_cast<float *>(buffer)[i] = static_cast<float>(v); break;
    case COHORT_FLOAT64: static_cast<double *>(buffer)[i] = static_cast<double>(v); break;
    default: break;
  }
}

// The average of a sum as the executor computes it: integers truncate, fp64 divides in double,
// the others in fp32 (fp16/bf16 then round again).
void put_average(cohort_dtype_t dtype, void *buffer, size_t i, long sum, int n) {
  switch (dtype) {
    case COHORT_FLOAT64: static_cast<double *>(buffer)[i] = static_cast<double>(sum) / n; break;
    case COHORT_FLOAT32: static_cast<float *>(buffer)[i] = static_cast<float>(sum) / n; break;
    case COHORT_FLOAT16:
      static_cast<uint16_t *>(buffer)[i] = float_to_fp16(static_cast<float>(sum) / n);
      break;
    case COHORT_BFLOAT16:
      static_cast<uint16_t *>(buffer)[i] = float_to_bf16(static_cast<float>(sum) / n);
      break;
    default: put(dtype, buffer, i, sum / n);
  }
}

struct Case {
  coll::Collective collective;
  const char *algorithm;
  int n;
  size_t count;
  cohort_dtype_t dtype;
  cohort_op_t op;
  bool in_place;
  size_t capacity;
  size_t reference_min = 0;  // single copy for messages of at least this size (0: never)
};

size_t in_elems(const Case &c) {
  return c.collective == coll::Collective::kReduceScatter ||
                 c.collective == coll::Collective::kAlltoall
             ? c.count * c.n
             : c.count;
}
size_t out_elems(const Case &c) {
  return c.collective == coll::Collective::kAllgather || c.collective == coll::Collective::kAlltoall
             ? c.count * c.n
             : c.count;
}

long combine(cohort_op_t op, long a, long b) {
  switch (op) {
    case COHORT_SUM:
    case COHORT_AVG: return a + b;
    case COHORT_PROD: return a * b;
    case COHORT_MIN: return std::min(a, b);
    default: return std::max(a, b);
  }
}

void run(const Case &c) {
  SCOPED_TRACE(std::string(coll::collective_name(c.collective)) + "/" + c.algorithm +
               " n=" + std::to_string(c.n) + " count=" + std::to_string(c.count) + " " +
               dtype_name(c.dtype) + " " + op_name(c.op) + (c.in_place ? " in-place" : "") +
               " mailbox=" + std::to_string(c.capacity) +
               " single-copy>=" + std::to_string(c.reference_min));
  const int n = c.n;
  const size_t elem = dtype_size(c.dtype);
  std::vector<int> ring(n);
  std::iota(ring.begin(), ring.end(), 0);
  std::reverse(ring.begin(), ring.end());
  // Value of rank r's input element i: small, nonzero for prod, positive for unsigned types.
  auto value = [&](int r, size_t i) -> long {
    return c.op == COHORT_PROD ? 1 + static_cast<long>((r + i) % 2)
                               : static_cast<long>((r * 7 + i * 3) % 13) + 1;
  };
  std::vector<std::vector<char>> src(n), dst(n), scratch(n);
  Mesh mesh(n, c.capacity);
  if (c.reference_min > 0) mesh.enable_references(c.reference_min);
  std::vector<std::unique_ptr<coll::Algorithm>> algorithms(n);
  for (int r = 0; r < n; ++r) {
    src[r].assign(in_elems(c) * elem + 8, 0);
    dst[r].assign(out_elems(c) * elem + 8, 0);
    for (size_t i = 0; i < in_elems(c); ++i) put(c.dtype, src[r].data(), i, value(r, i));
    coll::CollArgs args;
    args.collective = c.collective;
    args.count = c.count;
    args.op = c.op;
    args.in_place = c.in_place;
    args.rank = r;
    args.size = n;
    args.elem_size = elem;
    args.ring = &ring;
    algorithms[r] = coll::find_algorithm(c.collective, c.algorithm)->make(args);
    scratch[r].assign(algorithms[r]->scratch_count() * elem + 8, 0);
    if (c.in_place && c.collective == coll::Collective::kAllgather) {
      std::memcpy(dst[r].data() + r * c.count * elem, src[r].data(), c.count * elem);
    } else if (c.in_place) {
      dst[r] = src[r];
    }
  }
  std::vector<Status> results(n, COHORT_IN_PROGRESS);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      coll::PeerList peers(mesh.channels_of(r));
      // In place: reduce-scatter's output is the rank's block of its input.
      size_t dst_offset =
          c.in_place && c.collective == coll::Collective::kReduceScatter ? r * c.count * elem : 0;
      Buffers buffers;
      buffers.src = c.in_place ? dst[r].data() : src[r].data();
      buffers.dst = dst[r].data() + dst_offset;
      buffers.scratch = scratch[r].data();
      HostExecution execution(peers);
      execution.start(*algorithms[r], buffers, c.dtype);
      Backoff backoff;
      int64_t deadline = deadline_after(60);
      Status s;
      while ((s = execution.progress()) == COHORT_IN_PROGRESS && now_ns() < deadline) {
        if (execution.moved()) backoff.reset();
        backoff.pause();
      }
      results[r] = s;
    });
  }
  for (std::thread &t : threads) t.join();
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(results[r], COHORT_SUCCESS) << "rank " << r << ": " << last_error();
  std::vector<char> expected(out_elems(c) * elem);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < c.count; ++i) {
      if (c.collective == coll::Collective::kAllreduce ||
          c.collective == coll::Collective::kReduceScatter) {
        size_t at = c.collective == coll::Collective::kReduceScatter ? r * c.count + i : i;
        long acc = value(0, at);
        for (int q = 1; q < n; ++q) acc = combine(c.op, acc, value(q, at));
        if (c.op == COHORT_AVG) {
          put_average(c.dtype, expected.data(), i, acc, n);
        } else {
          put(c.dtype, expected.data(), i, acc);
        }
      } else if (c.collective == coll::Collective::kAllgather) {
        for (int q = 0; q < n; ++q) put(c.dtype, expected.data(), q * c.count + i, value(q, i));
      } else if (c.collective == coll::Collective::kAlltoall) {
        for (int q = 0; q < n; ++q)
          put(c.dtype, expected.data(), q * c.count + i, value(q, r * c.count + i));
      }
    }
    size_t bytes = (c.collective == coll::Collective::kAllreduce ||
                            c.collective == coll::Collective::kReduceScatter
                        ? c.count
                        : out_elems(c)) *
                   elem;
    const char *got = dst[r].data();
    if (c.in_place && c.collective == coll::Collective::kReduceScatter) got += r * c.count * elem;
    if (bytes > 0) {
      ASSERT_EQ(std::memcmp(got, expected.data(), bytes), 0) << "rank " << r;
    }
  }
}

}  // namespace

TEST(HostExecutor, AllreduceEveryDtypeAndOp) {
  for (const char *algorithm : {"ring", "direct"}) {
    for (int dtype = 0; dtype < COHORT_NUM_DTYPES; ++dtype) {
      for (int op = 0; op < COHORT_NUM_OPS; ++op) {
        run({coll::Collective::kAllreduce, algorithm, 3, 1023, static_cast<cohort_dtype_t>(dtype),
             static_cast<cohort_op_t>(op), dtype % 2 == 0, 256});
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(HostExecutor, EveryCollectiveManyRanksSmallMailboxes) {
  const std::pair<coll::Collective, const char *> algorithms[] = {
      {coll::Collective::kAllreduce, "ring"},
      {coll::Collective::kAllreduce, "direct"},
      {coll::Collective::kReduceScatter, "ring"},
      {coll::Collective::kAllgather, "ring"},
      {coll::Collective::kAlltoall, "pairwise"}};
  for (auto [collective, name] : algorithms) {
    for (int n : {1, 2, 4, 8}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}}) {
        for (bool in_place : {false, true}) {
          run({collective, name, n, count, COHORT_FLOAT32, COHORT_SUM, in_place, 64});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(HostExecutor, SingleCopyEveryCollectiveInPlaceOrNot) {
  const std::pair<coll::Collective, const char *> algorithms[] = {
      {coll::Collective::kAllreduce, "ring"},     {coll::Collective::kAllreduce, "direct"},
      {coll::Collective::kReduceScatter, "ring"}, {coll::Collective::kAllgather, "ring"},
      {coll::Collective::kAlltoall, "pairwise"},  {coll::Collective::kBarrier, "dissemination"}};
  for (auto [collective, name] : algorithms) {
    for (int n : {2, 3, 5}) {
      // min 8: nearly every message by reference; 4096: mixed with mailbox messages.
      for (size_t min : {size_t{8}, size_t{4096}}) {
        for (bool in_place : {false, true}) {
          const bool barrier = collective == coll::Collective::kBarrier;  // no data: count 0
          run({collective, name, n, barrier ? 0u : 70001u, COHORT_BFLOAT16, COHORT_SUM, in_place,
               256, min});
          run({collective, name, n, barrier ? 0u : 1023u, COHORT_INT32, COHORT_MAX, in_place, 64,
               min});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(HostExecutor, SingleCopyFromAProcessThatIsGoneIsANamedError) {
  uint64_t word = 0;
  // pid 0x7ffffff0 exists nowhere (above pid_max).
  EXPECT_EQ(read_process_memory(0x7ffffff0, &word, &word, sizeof(word)), COHORT_ERR_SYSTEM);
  EXPECT_NE(last_error().find("COHORT_SHM_SINGLE_COPY_BYTES=0"), std::string::npos) << last_error();
  uint64_t from = 42;
  EXPECT_EQ(read_process_memory(getpid(), &from, &word, sizeof(word)), COHORT_SUCCESS);
  EXPECT_EQ(word, 42u);
}

TEST(HostExecutor, BarrierAndLargeMessages) {
  run({coll::Collective::kBarrier, "dissemination", 5, 0, COHORT_INT8, COHORT_SUM, false, 64});
  run({coll::Collective::kAllreduce, "ring", 4, 1 << 18, COHORT_BFLOAT16, COHORT_MAX, false, 4096});
  run({coll::Collective::kAllreduce, "direct", 4, 65537, COHORT_INT64, COHORT_SUM, true, 4096});
}

}  // namespace cohort::tl_host
