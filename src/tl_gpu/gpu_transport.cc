// The CUDA IPC transport (gpu_transport.h): windows, their mappings, and the launches.
#include "tl_gpu/gpu_transport.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <vector>

#include "core/clock.h"
#include "core/gpu_identity.h"
#include "core/log.h"
#include "core/params.h"
#include "kernels/device_team.h"
#include "tl_gpu/cache_sync.h"
#include "tl_gpu/cuda_call.h"
#include "tl_gpu/device_memory.h"
#include "tl_gpu/launch.h"
#include "tl_gpu/peer_reach.h"
#include "tl_gpu/registrations.h"
#include "tl_gpu/window_memory.h"
#include "topo/nvml.h"

namespace cohort::tl_gpu {
namespace {

namespace k = cohort::kernels;

// This rank's part of the device-setup exchange (trivially copyable: it travels as bytes).
struct SetupRecord {
  cudaIpcMemHandle_t window;
  int32_t max_blocks;    // what this rank's GPU holds at once for this team; 0: not set up
  uint32_t unreachable;  // unreachable_peers(): local ranks whose GPU this rank's cannot reach
  uint32_t by_nvml;      // the bits of `unreachable` that NVML's answer set
};

// The ordinal of `gpu` (TeamView::gpu) among this process's devices; -1: not visible here.
int visible_ordinal(uint64_t gpu) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky: the caller's next cudaGetLastError must not see it
    return -1;
  }
  for (int device = 0; device < count; ++device) {
    GpuIdentity identity;
    if (is_error(query_gpu_identity(device, &identity))) {
      cudaGetLastError();
      continue;
    }
    if (tl::TeamView::gpu_of_uuid(identity.uuid) == gpu) return device;
  }
  return -1;
}

// Whether kernels on `device` can read and write memory of the device `peer` (an ordinal).
PeerAccess cuda_access(int device, int peer) {
  int can = 0;
  if (const cudaError_t err = cudaDeviceCanAccessPeer(&can, device, peer); err != cudaSuccess) {
    cudaGetLastError();  // not sticky; the pair counts as unreachable
    COHORT_LOG_WARN(INIT, "cudaDeviceCanAccessPeer(%d, %d): %s: the pair counts as unreachable",
                    device, peer, cudaGetErrorString(err));
    return PeerAccess::kNo;
  }
  return can != 0 ? PeerAccess::kYes : PeerAccess::kNo;
}

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

// Pinned host memory of the team: the stop word abort() copies into every window, and the
// fault record a stopped kernel writes.
struct Control {
  uint32_t stop_word;  // kernels::stop_word
  uint32_t reserved;
  k::DeviceFault fault;
};

class GpuTransport final : public tl::DeviceTransport {
 public:
  ~GpuTransport() override;
  const char *name() const override { return "cuda-ipc"; }
  bool wanted(const tl::TeamView &team, std::string *why) const override;
  bool active() const override { return active_; }
  size_t record_bytes(const tl::TeamView &) const override { return sizeof(SetupRecord); }
  Status post(const tl::TeamView &team, void *record) override;
  Status connect(const tl::TeamView &team, const tl::RecordTable &records) override;
  Status enqueue(const coll::Call &call, void *stream) override;
  Status synchronize(void *stream, double timeout_s) override;
  Status fault() const override;
  void abort() override;
  size_t memory_bytes() const override;
  Status registrable() const override;
  size_t registration_record_bytes() const override { return sizeof(RegistrationRecord); }
  void prepare_registration(void *buffer, size_t bytes, void *record) override;
  Status add_registration(void *buffer, const tl::RecordTable &records, int *slot) override;
  Status quiesce() override;
  Status remove_registration(int slot) override;
  bool cache_note(const void *ptr, size_t bytes) override;
  bool cache_wanted() override;
  size_t cache_block_bytes() const override { return CacheSync::block_bytes(); }
  void cache_prepare(void *block) override;
  Status cache_apply(const tl::RecordTable &blocks, uint32_t *failed) override;
  void cache_settle(const std::vector<uint32_t> &failed) override;

 private:
  Status allocate(const tl::TeamView &team, SetupRecord *record);
  void describe_reach(const tl::TeamView &team, SetupRecord *record);
  void ask_nvml(const tl::TeamView &team, const std::vector<int> &hidden);
  std::string reach_problem(const tl::TeamView &team,
                            const std::vector<SetupRecord> &records) const;
  Status map_peers(const tl::TeamView &team, const std::vector<SetupRecord> &records);
  Status unavailable(const coll::Call &call) const;
  Status order_after_last(cudaStream_t stream, bool capturing);
  Status launched(cudaStream_t stream, bool capturing);
  void release();
  std::string describe_local(int local_rank) const;
  volatile Control &control() const {
    return *reinterpret_cast<volatile Control *>(control_.host());
  }

  bool active_ = false;
  std::string inactive_why_ = "the team was not set up for the GPU";
  int device_ = -1;
  std::vector<int> local_ranks_;        // team rank of each local rank
  std::vector<PeerAccess> access_;      // to each local rank's GPU, as this rank found it
  std::vector<std::string> nvml_said_;  // NVML's words on each local rank's GPU, if asked
  tl::TeamView view_;
  DeviceAllocation window_;
  DeviceAllocation counters_;  // the call counter, finished blocks, the fault claim
  MappedHostAllocation control_;
  std::vector<std::unique_ptr<IpcMapping>> peers_;  // by local rank (null: this rank)
  Registrations registered_;                        // cohort_mem_register's buffers
  CacheSync cache_;                                 // and the registration cache's
  Stream stream_;          // blocking calls' (ordered with the legacy default stream)
  Stream control_stream_;  // abort's copies: never behind a kernel of this team
  // Recorded after every launch: a call on another stream than the last waits for it, so a
  // rank's kernels of one team always run in call order (they share flags and counters).
  Event done_;
  cudaStream_t last_stream_ = nullptr;
  bool launched_ = false;
  bool copied_ = false;  // a team of one rank enqueued a copy (its calls record no event)
  std::atomic<bool> aborted_{false};
  k::DeviceTeam team_{};
};

GpuTransport::~GpuTransport() {
  if (device_ < 0) return;
  DeviceGuard guard(device_);
  // This team's kernels must end before the windows go (a stuck one ends at its timeout, at
  // once after an abort); then everything is freed with the team's device current.
  if (launched_) cudaEventSynchronize(done_.get());
  release();
}

void GpuTransport::release() {
  registered_.clear();
  peers_.clear();
  done_.reset();
  control_stream_.reset();
  stream_.reset();
  control_.reset();
  counters_.reset();
  window_.reset();
}

bool GpuTransport::wanted(const tl::TeamView &team, std::string *why) const {
  // A team across hosts runs its device collectives through host memory (team/coll_staged.cc):
  // no window to allocate.
  if (team.node_count > 1) {
    *why = strprintf(
        "the team spans %d hosts: its collectives on device memory run through "
        "host memory, and registration on such teams is not built yet",
        team.node_count);
    return false;
  }
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
  Status s = allocate(team, record);
  if (!is_error(s)) describe_reach(team, record);
  return s;
}

// This rank's window, counters, control words and stream, and its part of the exchange.
Status GpuTransport::allocate(const tl::TeamView &team, SetupRecord *record) {
  const int local_size = static_cast<int>(local_ranks_.size());
  team_.layout = k::window_layout(local_size);
  // A rank alone on its host only copies (launch_call): no kernel touches a window.
  Status s = local_size > 1
                 ? window_.allocate(team_.layout.total_bytes, "allocating the team's GPU window")
                 : COHORT_SUCCESS;
  if (!is_error(s)) s = counters_.allocate(16, "allocating the team's GPU call counter");
  if (!is_error(s)) s = control_.allocate(sizeof(Control), "allocating pinned control words");
  if (!is_error(s)) s = stream_.create(true, "creating the team's stream");
  if (!is_error(s)) s = control_stream_.create(false, "creating the team's control stream");
  if (!is_error(s)) s = done_.create("creating the team's event");
  // The zeroing must be done before any peer writes a flag here (after the exchange).
  if (!is_error(s)) {
    s = cuda_status(cudaStreamSynchronize(cudaStreamLegacy), "zeroing the team's GPU window");
  }
  if (!is_error(s) && local_size > 1) {
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

// Which local ranks' GPUs this rank's cannot reach by peer access: CUDA answers for the GPUs
// this process sees, NVML for the others.
void GpuTransport::describe_reach(const tl::TeamView &team, SetupRecord *record) {
  const int local_size = static_cast<int>(local_ranks_.size());
  const int me = team.local_rank[team.rank];
  std::vector<uint64_t> gpus;
  for (int r : local_ranks_) gpus.push_back(team.gpu[r]);
  // Ranks on this rank's GPU are not asked about: they stay kYes.
  access_.assign(local_size, PeerAccess::kYes);
  nvml_said_.assign(local_size, "");
  std::vector<int> hidden;  // local ranks whose GPU this process does not see
  for (int q = 0; q < local_size; ++q) {
    if (q == me || gpus[q] == gpus[me]) continue;
    const int peer = visible_ordinal(gpus[q]);
    if (peer >= 0) {
      access_[q] = cuda_access(device_, peer);
    } else {
      hidden.push_back(q);
    }
  }
  ask_nvml(team, hidden);
  const PeerMarks marks = unreachable_peers(gpus, me, [&](int q) { return access_[q]; });
  record->unreachable = marks.unreachable;
  record->by_nvml = marks.by_nvml;
  // COHORT_INJECT_NO_P2P (Cohort's tests): this team rank's GPU reaches no other rank's, as if
  // cudaDeviceCanAccessPeer said no (ranks sharing its GPU too: the one GPU tests have).
  int64_t injected = -1;
  if (!is_error(param_int("INJECT_NO_P2P", &injected)) && injected == team.rank) {
    record->unreachable = ((1u << local_size) - 1) & ~(1u << me);
  }
}

// NVML's answers (one session) for the local ranks `hidden`, whose GPUs this process does not
// see: NVML ignores CUDA_VISIBLE_DEVICES and knows the pair by bus id.
void GpuTransport::ask_nvml(const tl::TeamView &team, const std::vector<int> &hidden) {
  if (hidden.empty()) return;
  const std::string &mine = team.bus_id[team.rank];
  std::vector<std::string> bus_ids;
  for (int q : hidden) bus_ids.push_back(team.bus_id[local_ranks_[q]]);
  const std::vector<topo::NvmlP2pAnswer> answers = topo::nvml_p2p(mine, bus_ids);
  for (size_t i = 0; i < hidden.size(); ++i) {
    const int q = hidden[i];
    access_[q] = invisible_peer_access(answers[i].status);
    nvml_said_[q] = answers[i].detail;
    if (access_[q] == PeerAccess::kNvmlYes) continue;
    COHORT_LOG_INFO(INIT,
                    "peer access from GPU %s to %s's GPU %s, which CUDA does not show this "
                    "process: %s (%s)",
                    mine.c_str(), team.describe(local_ranks_[q]).c_str(), bus_ids[i].c_str(),
                    access_[q] == PeerAccess::kNvmlNo ? "none, NVML says"
                                                      : "unknown, counted as reachable: NVML "
                                                        "cannot tell",
                    answers[i].detail.c_str());
  }
}

// Why GPU collectives are off, from every local rank's record: the same on every rank.
std::string GpuTransport::reach_problem(const tl::TeamView &team,
                                        const std::vector<SetupRecord> &records) const {
  std::vector<PeerReach> ranks;
  for (size_t q = 0; q < records.size(); ++q) {
    const SetupRecord &record = records[q];
    ranks.push_back({local_ranks_[q], team.describe(local_ranks_[q]), team.bus_id[local_ranks_[q]],
                     record.unreachable, record.by_nvml});
  }
  return unreachable_reason(ranks, team.name);
}

Status GpuTransport::connect(const tl::TeamView &team, const tl::RecordTable &records) {
  if (device_ < 0) return COHORT_SUCCESS;
  DeviceGuard guard(device_);
  const int local_size = static_cast<int>(local_ranks_.size());
  std::vector<SetupRecord> by_local(local_size);
  for (int q = 0; q < local_size; ++q) {
    std::memcpy(&by_local[q], records.of(local_ranks_[q]), sizeof(SetupRecord));
  }
  // Decided before any mapping: a pair without peer access would fail cudaIpcOpenMemHandle,
  // and with it the whole team; instead every rank turns GPU collectives off alike and the
  // team runs host collectives.
  if (std::string why = reach_problem(team, by_local); !why.empty()) {
    // Once per process at WARN (device collectives are refused, the component stages them to
    // host memory: slower, and the user should know why); every team's at INFO.
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      COHORT_LOG_WARN(INIT, "%s", why.c_str());
    } else {
      COHORT_LOG_INFO(INIT, "%s", why.c_str());
    }
    inactive_why_ = why;
    release();
    return COHORT_SUCCESS;
  }
  Status s = map_peers(team, by_local);
  if (is_error(s)) return s;
  double timeout_s = 600;
  s = param_double("COLL_TIMEOUT", &timeout_s);
  if (is_error(s)) return s;
  team_.timeout_ns = static_cast<uint64_t>(timeout_s * 1e9);
  team_.sequence = reinterpret_cast<unsigned long long *>(counters_.get());
  team_.blocks_done = reinterpret_cast<unsigned int *>(counters_.get() + 8);
  team_.fault_claim = reinterpret_cast<unsigned int *>(counters_.get() + 12);
  char *control = control_.device();
  team_.fault = reinterpret_cast<volatile k::DeviceFault *>(control + offsetof(Control, fault));
  active_ = true;
  int64_t cached = 0;
  if (s = param_int("REG_CACHE_ENTRIES", &cached); is_error(s)) return s;
  cache_.configure(local_size > 1 ? static_cast<size_t>(std::max<int64_t>(cached, 0)) : 0, device_,
                   team_.rank, local_size);
  if (local_size == 1) {
    COHORT_LOG_INFO(INIT, "GPU %d: one rank, no window (its calls are copies on its stream)",
                    device_);
    return COHORT_SUCCESS;
  }
  const WindowMemory memory = window_memory(local_size);
  COHORT_LOG_INFO(INIT,
                  "GPU %d: window of %.2f MiB for %d local ranks (%.2f MiB per peer, %.1f KiB "
                  "per peer per block), %d blocks per kernel",
                  device_, memory.total / 1048576.0, local_size, memory.per_peer / 1048576.0,
                  memory.per_block / 1024.0, team_.max_blocks);
  return COHORT_SUCCESS;
}

// Every other local rank's window, mapped; the smallest block count of all ranks.
Status GpuTransport::map_peers(const tl::TeamView &team, const std::vector<SetupRecord> &records) {
  const int local_size = static_cast<int>(local_ranks_.size());
  const int me = team.local_rank[team.rank];
  peers_.resize(local_size);
  team_.rank = me;
  team_.size = local_size;
  team_.max_blocks = k::kMaxBlocks;
  for (int q = 0; q < local_size; ++q) {
    const SetupRecord &record = records[q];
    team_.max_blocks = std::min(team_.max_blocks, record.max_blocks);
    if (q == me) {
      team_.windows[q] = window_.get();
      continue;
    }
    peers_[q] = std::make_unique<IpcMapping>();
    const std::string what =
        strprintf("mapping the GPU window of %s (GPU %s) on this rank's GPU %s",
                  team.describe(local_ranks_[q]).c_str(), team.bus_id[local_ranks_[q]].c_str(),
                  team.bus_id[team.rank].c_str());
    Status s = peers_[q]->open(record.window, what.c_str());
    if (is_error(s)) {
      return fail(s, last_error() + "; " + ipc_failure_hint(access_[q], nvml_said_[q]));
    }
    team_.windows[q] = peers_[q]->get();
  }
  return COHORT_SUCCESS;
}

Status GpuTransport::unavailable(const coll::Call &call) const {
  const char *name = coll::collective_name(call.collective);
  if (!active_) {
    return failf(COHORT_ERR_NOT_SUPPORTED, "%s on GPU device memory: %s", name,
                 inactive_why_.c_str());
  }
  return COHORT_SUCCESS;
}

Status GpuTransport::enqueue(const coll::Call &call, void *stream) {
  Status s = unavailable(call);
  if (is_error(s)) return s;
  if (s = fault(); is_error(s)) return s;
  DeviceGuard guard(device_);
  cudaStream_t target = stream != nullptr ? static_cast<cudaStream_t>(stream) : stream_.get();
  // A team of one rank only copies its input (launch_call): it shares no window, flag or
  // counter, so there is no call to order after and no end to record (quiesce waits for the
  // device instead), and a CUDA graph of its calls holds their copies alone.
  if (team_.size == 1) {
    s = launch_call(team_, local_ranks_, registered_, call, target);
    copied_ = copied_ || !is_error(s);
    return s;
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  s = cuda_status(cudaStreamIsCapturing(target, &capture), "asking the stream's capture state");
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  if (!is_error(s)) s = order_after_last(target, capturing);
  if (!is_error(s)) s = launch_call(team_, local_ranks_, registered_, call, target);
  if (is_error(s) && s != COHORT_ERR_INVALID_ARG && s != COHORT_ERR_NOT_SUPPORTED) {
    // A rank that launched nothing would make its peers take its next call's data for this
    // one's: the team stops on every rank instead (a refused call is refused on every rank,
    // from the same arguments, and launches nothing anywhere).
    const std::string why = last_error();
    abort();
    return fail(s, why);
  }
  return is_error(s) ? s : launched(target, capturing);
}

// A rank's kernels of one team run in call order: the first call on another stream than the
// last waits for the last one's kernel.  A captured call waits as an external dependency
// (the graph then orders its replays after the work before the capture).
Status GpuTransport::order_after_last(cudaStream_t stream, bool capturing) {
  if (!launched_ || stream == last_stream_) return COHORT_SUCCESS;
  return cuda_status(
      cudaStreamWaitEvent(stream, done_.get(), capturing ? cudaEventWaitExternal : 0),
      "ordering the collective after the team's last one (another stream)");
}

Status GpuTransport::launched(cudaStream_t stream, bool capturing) {
  last_stream_ = stream;
  launched_ = true;
  return cuda_status(
      cudaEventRecordWithFlags(done_.get(), stream, capturing ? cudaEventRecordExternal : 0),
      "recording the collective's end");
}

Status GpuTransport::synchronize(void *stream, double timeout_s) {
  if (!active_) return COHORT_SUCCESS;
  DeviceGuard guard(device_);
  cudaStream_t target = stream != nullptr ? static_cast<cudaStream_t>(stream) : stream_.get();
  const int64_t start = now_ns();
  // Kernels end themselves at their timeout; past twice that the host stops them, and waits
  // a last 10 s for a kernel that never started (the GPU busy with other work).
  int64_t give_up = start + static_cast<int64_t>(2 * timeout_s * 1e9) + 1000000000;
  bool stopped = false;
  for (unsigned polls = 0;; ++polls) {
    cudaError_t err = cudaStreamQuery(target);
    if (err == cudaSuccess) break;
    if (err != cudaErrorNotReady) return cuda_status(err, "a collective on the GPU");
    if (polls < 1000) continue;
    const int64_t now = now_ns();
    if (now > give_up && stopped) {
      return failf(COHORT_ERR_TIMEOUT,
                   "a collective of team '%s' on the GPU did not end within %.0f s, nor 10 s "
                   "after its team was stopped: the GPU may be busy with other work",
                   view_.name.c_str(), 2 * timeout_s + 1);
    }
    if (now > give_up) {
      abort();
      stopped = true;
      give_up = now + 10000000000;
    }
    if (now - start < 100000000) {
      sched_yield();
    } else {
      usleep(100);  // a long wait: leave the core to others
    }
  }
  return fault();
}

std::string GpuTransport::describe_local(int local_rank) const {
  return local_rank >= 0 && local_rank < static_cast<int>(local_ranks_.size())
             ? view_.describe(local_ranks_[local_rank])
             : std::string("a peer");
}

Status GpuTransport::fault() const {
  if (!active_) return COHORT_SUCCESS;
  volatile Control &c = control();
  const uint32_t reason = c.fault.reason;
  if (reason == k::kStopNone && !aborted_) return COHORT_SUCCESS;
  std::atomic_thread_fence(std::memory_order_acquire);  // the fields written before `reason`
  const unsigned long long call = c.fault.sequence;
  const std::string waited = describe_local(c.fault.peer);
  const std::string by = describe_local(c.fault.by);
  const char *team = view_.name.c_str();
  const double timeout_s = team_.timeout_ns / 1e9;
  switch (reason) {
    case k::kStopTimeout:
      return failf(COHORT_ERR_TIMEOUT,
                   "GPU collective #%llu of team '%s' waited for %s for longer than "
                   "COHORT_COLL_TIMEOUT (%.0f s): that rank did not make the same call; the team "
                   "runs no more collectives",
                   call, team, waited.c_str(), timeout_s);
    case k::kStopPeerTimeout:
      return failf(COHORT_ERR_TIMEOUT,
                   "GPU collective #%llu of team '%s' stopped: %s waited for %s for longer than "
                   "COHORT_COLL_TIMEOUT (%.0f s); the team runs no more collectives",
                   call, team, by.c_str(), waited.c_str(), timeout_s);
    case k::kStopAbort:
      if (c.fault.by >= 0) {
        return failf(COHORT_ERR_ABORTED,
                     "GPU collective #%llu of team '%s' stopped: %s aborted the team", call, team,
                     by.c_str());
      }
      [[fallthrough]];
    default:
      return failf(
          COHORT_ERR_ABORTED,
          "team '%s' runs no more GPU collectives: this rank stopped it (cohort_team_abort, "
          "or a launch that failed)",
          team);
  }
}

// Stops this rank's kernels of the team (the host word) and every peer's (the stop word in
// each window), without waiting: the copies run on the control stream, beside any kernel.
void GpuTransport::abort() {
  if (!active_ || aborted_.exchange(true)) return;
  DeviceGuard guard(device_);
  control().stop_word = k::stop_word(team_.rank, -1);
  const void *word = control_.host() + offsetof(Control, stop_word);
  for (int q = 0; q < team_.size; ++q) {
    cudaMemcpyAsync(team_.windows[q] + team_.layout.stop_offset, word, sizeof(uint32_t),
                    cudaMemcpyHostToDevice, control_stream_.get());
  }
}

size_t GpuTransport::memory_bytes() const {
  return active_ ? team_.layout.total_bytes + 16 + registered_.device_bytes() : 0;
}

Status GpuTransport::registrable() const {
  if (!active_) {
    return failf(COHORT_ERR_NOT_SUPPORTED, "cohort_mem_register: %s", inactive_why_.c_str());
  }
  return COHORT_SUCCESS;
}

void GpuTransport::prepare_registration(void *buffer, size_t bytes, void *record) {
  DeviceGuard guard(device_);
  Registrations::prepare(buffer, bytes, device_, static_cast<RegistrationRecord *>(record));
}

Status GpuTransport::add_registration(void *buffer, const tl::RecordTable &records, int *slot) {
  DeviceGuard guard(device_);
  std::vector<RegistrationRecord> by_local(local_ranks_.size());
  std::vector<std::string> describe;
  for (size_t q = 0; q < local_ranks_.size(); ++q) {
    std::memcpy(&by_local[q], records.of(local_ranks_[q]), sizeof(RegistrationRecord));
    describe.push_back(view_.describe(local_ranks_[q]));
  }
  Status s = registered_.add(by_local, team_.rank, buffer, describe, slot);
  if (!is_error(s)) team_.registered = registered_.table();
  return s;
}

Status GpuTransport::quiesce() {
  if (!active_ || (!launched_ && !copied_)) return COHORT_SUCCESS;
  DeviceGuard guard(device_);
  // A team of one rank records no end of its copies (enqueue): its last one, eager or in a
  // graph replayed since, is behind every work of this process on the device.
  if (copied_) {
    return cuda_status(cudaDeviceSynchronize(), "waiting for the one-rank team's last copy");
  }
  return cuda_status(cudaEventSynchronize(done_.get()), "waiting for the team's last collective");
}

Status GpuTransport::remove_registration(int slot) {
  DeviceGuard guard(device_);
  return registered_.remove(slot);
}

bool GpuTransport::cache_note(const void *ptr, size_t bytes) {
  return active_ && cache_.note(&registered_, ptr, bytes);
}

bool GpuTransport::cache_wanted() { return active_ && cache_.wanted(&registered_); }

void GpuTransport::cache_prepare(void *block) {
  DeviceGuard guard(device_);
  cache_.prepare(block);
}

Status GpuTransport::cache_apply(const tl::RecordTable &blocks, uint32_t *failed) {
  DeviceGuard guard(device_);
  std::vector<const void *> by_local;
  for (int q : local_ranks_) by_local.push_back(blocks.of(q));
  // A slot evicted may be read by no kernel still running (this rank's; the others' ended
  // before their rank came to the sync, as blocking calls do).
  if (CacheSync::evicts(by_local)) {
    if (Status s = quiesce(); is_error(s)) return s;
  }
  cache_.apply(
      &registered_, by_local, [this](int q) { return describe_local(q); }, failed);
  team_.registered = registered_.table();
  return COHORT_SUCCESS;
}

void GpuTransport::cache_settle(const std::vector<uint32_t> &failed) {
  DeviceGuard guard(device_);
  uint32_t any = 0;
  for (uint32_t f : failed) any |= f;
  cache_.settle(&registered_, any);
}

}  // namespace

std::unique_ptr<tl::DeviceTransport> make_gpu_transport() {
  return std::make_unique<GpuTransport>();
}

}  // namespace cohort::tl_gpu
