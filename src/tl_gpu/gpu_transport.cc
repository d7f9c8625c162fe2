// The CUDA IPC transport (gpu_transport.h): windows, their mappings, and the launches.
#include "tl_gpu/gpu_transport.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "core/clock.h"
#include "core/params.h"
#include "kernels/allreduce.h"
#include "kernels/device_team.h"
#include "tl_gpu/cuda_call.h"
#include "tl_gpu/device_memory.h"

namespace cohort::tl_gpu {
namespace {

namespace k = cohort::kernels;

// This rank's part of the device-setup exchange (trivially copyable: it travels as bytes).
struct SetupRecord {
  cudaIpcMemHandle_t window;
  int32_t max_blocks;  // what this rank's GPU holds at once for this team; 0: not set up
  int32_t reserved;
};

// Makes `device` current for a scope and restores the caller's afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
      cudaSetDevice(device);
    } else {
      previous_ = -1;
    }
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

 private:
  int previous_ = -1;
};

// Where the host keeps the abort word and the fault record that kernels read and write.
struct Control {
  uint32_t abort;
  uint32_t abort_word;  // what abort() copies into every window: this local rank + 1
  k::DeviceFault fault;
};

class GpuTransport final : public tl::DeviceTransport {
 public:
  ~GpuTransport() override;
  const char *name() const override { return "cuda-ipc"; }
  bool wanted(const tl::TeamView &team, std::string *why) const override;
  size_t record_bytes(const tl::TeamView &) const override { return sizeof(SetupRecord); }
  Status post(const tl::TeamView &team, void *record) override;
  Status connect(const tl::TeamView &team, const tl::RecordTable &records) override;
  Status enqueue(const tl::DeviceCall &call, void *stream) override;
  Status synchronize(void *stream, double timeout_s) override;
  Status fault() const override;
  void abort() override;
  size_t memory_bytes() const override;

 private:
  Status allocate(const tl::TeamView &team, SetupRecord *record);
  Status unavailable(const tl::DeviceCall &call) const;
  Status launch_allreduce(const tl::DeviceCall &call, cudaStream_t stream);
  volatile Control &control() const {
    return *reinterpret_cast<volatile Control *>(control_.host());
  }

  bool active_ = false;
  std::string inactive_why_ = "the team was not set up for the GPU";
  int device_ = -1;
  std::vector<int> local_ranks_;  // team rank of each local rank
  tl::TeamView view_;
  DeviceAllocation window_;
  DeviceAllocation counters_;  // the call counter, finished blocks, the fault claim
  MappedHostAllocation control_;
  std::vector<std::unique_ptr<IpcMapping>> peers_;  // by local rank (null: this rank)
  Stream stream_;
  k::DeviceTeam team_{};
};

GpuTransport::~GpuTransport() {
  if (!active_) return;
  DeviceGuard guard(device_);
  // Kernels of this team may still run on the callers' streams: they must end before the
  // windows go (a stuck one ends at its timeout, or at once after abort()).
  cudaDeviceSynchronize();
}

bool GpuTransport::wanted(const tl::TeamView &team, std::string *why) const {
  const std::vector<int> local = team.local_ranks();
  for (int r : local) {
    if (team.cuda_device[r] >= 0) continue;
    *why = team.describe(r) + " has no GPU bound";
    return false;
  }
  if (static_cast<int>(local.size()) > k::kMaxLocalRanks) {
    *why = strprintf("%zu ranks share the host; GPU collectives take at most %d per host",
                     local.size(), k::kMaxLocalRanks);
    return false;
  }
  return true;
}

Status GpuTransport::post(const tl::TeamView &team, void *out) {
  auto *record = static_cast<SetupRecord *>(out);
  *record = SetupRecord{};
  view_ = team;
  local_ranks_ = team.local_ranks();
  std::string why;
  if (!wanted(team, &why)) {
    inactive_why_ = why;
    return COHORT_SUCCESS;
  }
  device_ = team.cuda_device[team.rank];
  DeviceGuard guard(device_);
  return allocate(team, record);
}

// This rank's window, counters, control words and stream, and its part of the exchange.
Status GpuTransport::allocate(const tl::TeamView &team, SetupRecord *record) {
  const int local_size = static_cast<int>(local_ranks_.size());
  team_.layout = k::window_layout(local_size);
  Status s = window_.allocate(team_.layout.total_bytes, "allocating the team's GPU window");
  if (!is_error(s)) s = counters_.allocate(16, "allocating the team's GPU call counter");
  if (!is_error(s)) s = control_.allocate(sizeof(Control), "allocating pinned control words");
  if (!is_error(s)) s = stream_.create();
  if (!is_error(s)) {
    s = cuda_status(cudaIpcGetMemHandle(&record->window, window_.get()),
                    "exporting the team's GPU window (CUDA IPC)");
  }
  int sms = 0;
  if (!is_error(s)) {
    s = cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_),
                    "asking the GPU's multiprocessor count");
  }
  if (is_error(s)) return s;
  // Every block of every rank's kernel must be resident at once (blocks wait for their
  // namesakes on the other ranks): ranks sharing this GPU split its multiprocessors.
  const int sharing =
      static_cast<int>(std::count_if(local_ranks_.begin(), local_ranks_.end(),
                                     [&](int r) { return team.gpu[r] == team.gpu[team.rank]; }));
  record->max_blocks = std::clamp(sms / std::max(1, sharing), 1, k::kMaxBlocks);
  return COHORT_SUCCESS;
}

Status GpuTransport::connect(const tl::TeamView &team, const tl::RecordTable &records) {
  if (device_ < 0) return COHORT_SUCCESS;
  DeviceGuard guard(device_);
  const int local_size = static_cast<int>(local_ranks_.size());
  const int me = team.local_rank[team.rank];
  peers_.resize(local_size);
  team_.rank = me;
  team_.size = local_size;
  team_.max_blocks = k::kMaxBlocks;
  for (int q = 0; q < local_size; ++q) {
    SetupRecord record;
    std::memcpy(&record, records.of(local_ranks_[q]), sizeof(record));
    team_.max_blocks = std::min(team_.max_blocks, record.max_blocks);
    if (q == me) {
      team_.windows[q] = window_.get();
      continue;
    }
    peers_[q] = std::make_unique<IpcMapping>();
    std::string what = "mapping the GPU window of " + team.describe(local_ranks_[q]);
    Status s = peers_[q]->open(record.window, what.c_str());
    if (is_error(s)) return s;
    team_.windows[q] = peers_[q]->get();
  }
  double timeout_s = 600;
  Status s = param_double("COLL_TIMEOUT", &timeout_s);
  if (is_error(s)) return s;
  team_.timeout_ns = static_cast<uint64_t>(timeout_s * 1e9);
  team_.sequence = reinterpret_cast<unsigned long long *>(counters_.get());
  team_.blocks_done = reinterpret_cast<unsigned int *>(counters_.get() + 8);
  team_.fault_claim = reinterpret_cast<unsigned int *>(counters_.get() + 12);
  char *control = control_.device();
  team_.abort = reinterpret_cast<volatile uint32_t *>(control + offsetof(Control, abort));
  team_.fault = reinterpret_cast<volatile k::DeviceFault *>(control + offsetof(Control, fault));
  active_ = true;
  return COHORT_SUCCESS;
}

Status GpuTransport::unavailable(const tl::DeviceCall &call) const {
  const char *name = coll::collective_name(call.collective);
  if (!active_) {
    return failf(COHORT_ERR_NOT_SUPPORTED, "%s on GPU device memory: %s", name,
                 inactive_why_.c_str());
  }
  if (view_.node_count > 1) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "%s on GPU device memory: the team spans %d hosts; GPU collectives run within "
                 "one host so far",
                 name, view_.node_count);
  }
  return COHORT_SUCCESS;
}

Status GpuTransport::enqueue(const tl::DeviceCall &call, void *stream) {
  Status s = unavailable(call);
  if (is_error(s)) return s;
  if (s = fault(); is_error(s)) return s;
  DeviceGuard guard(device_);
  cudaStream_t target = stream != nullptr ? static_cast<cudaStream_t>(stream) : stream_.get();
  if (call.collective == coll::Collective::kAllreduce) return launch_allreduce(call, target);
  return failf(COHORT_ERR_NOT_SUPPORTED, "%s on GPU device memory: not built yet",
               coll::collective_name(call.collective));
}

Status GpuTransport::launch_allreduce(const tl::DeviceCall &call, cudaStream_t stream) {
  k::AllreduceArgs args;
  args.team = team_;
  args.src = call.src;
  args.dst = call.dst;
  args.count = call.count;
  args.dtype = static_cast<k::DType>(call.dtype);
  args.op = static_cast<k::RedOp>(call.op);
  const bool oneshot = strcmp(call.algorithm, "oneshot") == 0;
  args.algo = oneshot ? k::AllreduceAlgo::kOneShot : k::AllreduceAlgo::kTwoShot;
  const size_t bytes = call.count * k::dtype_size(args.dtype);
  if (oneshot && bytes > k::kOneShotBytes) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "allreduce on GPU device memory: algorithm oneshot takes at most %zu bytes per "
                 "rank, this call has %zu (check COHORT_COLL_ALGO)",
                 k::kOneShotBytes, bytes);
  }
  return cuda_status(k::launch_allreduce(args, stream), "launching allreduce on the GPU");
}

Status GpuTransport::synchronize(void *stream, double timeout_s) {
  if (!active_) return COHORT_SUCCESS;
  DeviceGuard guard(device_);
  cudaStream_t target = stream != nullptr ? static_cast<cudaStream_t>(stream) : stream_.get();
  const int64_t start = now_ns();
  // Kernels end themselves at their timeout; past twice that the host stops them too.
  const int64_t give_up = start + static_cast<int64_t>(2 * timeout_s * 1e9) + 1000000000;
  for (unsigned polls = 0;; ++polls) {
    cudaError_t err = cudaStreamQuery(target);
    if (err == cudaSuccess) break;
    if (err != cudaErrorNotReady) return cuda_status(err, "a collective on the GPU");
    if (polls < 1000) continue;
    const int64_t now = now_ns();
    if (now > give_up) abort();
    if (now - start < 100000000) {
      sched_yield();
    } else {
      usleep(100);  // a long wait: leave the core to others
    }
  }
  return fault();
}

Status GpuTransport::fault() const {
  if (!active_) return COHORT_SUCCESS;
  volatile Control &c = control();
  const uint32_t reason = c.fault.reason;
  if (reason == k::kStopNone) return COHORT_SUCCESS;
  const int peer = c.fault.peer;
  const unsigned long long call = c.fault.sequence;
  std::string who = peer >= 0 && peer < static_cast<int>(local_ranks_.size())
                        ? view_.describe(local_ranks_[peer])
                        : std::string("a peer");
  if (reason == k::kStopAbort) {
    const int aborter = c.fault.aborter;
    std::string by = aborter >= 0 && aborter < static_cast<int>(local_ranks_.size())
                         ? view_.describe(local_ranks_[aborter]) + " aborted the team"
                         : std::string("this rank aborted the team (cohort_team_abort)");
    return failf(COHORT_ERR_ABORTED, "GPU collective #%llu of team '%s' stopped waiting for %s: %s",
                 call, view_.name.c_str(), who.c_str(), by.c_str());
  }
  return failf(
      COHORT_ERR_TIMEOUT,
      "GPU collective #%llu of team '%s' waited for %s for longer than COHORT_COLL_TIMEOUT "
      "(%.0f s): that rank did not make the same call; the team runs no more collectives",
      call, view_.name.c_str(), who.c_str(), team_.timeout_ns / 1e9);
}

void GpuTransport::abort() {
  if (!active_) return;
  control().abort = 1;
  DeviceGuard guard(device_);
  control().abort_word = static_cast<uint32_t>(team_.rank + 1);
  const void *word = control_.host() + offsetof(Control, abort_word);
  for (int q = 0; q < team_.size; ++q) {
    cudaMemcpyAsync(team_.windows[q] + team_.layout.abort_offset, word, sizeof(uint32_t),
                    cudaMemcpyHostToDevice, stream_.get());
  }
}

size_t GpuTransport::memory_bytes() const { return active_ ? team_.layout.total_bytes + 16 : 0; }

}  // namespace

std::unique_ptr<tl::DeviceTransport> make_gpu_transport() {
  return std::make_unique<GpuTransport>();
}

}  // namespace cohort::tl_gpu
