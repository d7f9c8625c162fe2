// The peer-access decision of a host's GPUs (see peer_reach.h).
#include "tl_gpu/peer_reach.h"

#include "core/status.h"
#include "kernels/device_team.h"

namespace cohort::tl_gpu {

static_assert(kernels::kMaxLocalRanks <= 32, "a local rank per bit of PeerReach::unreachable");

PeerAccess invisible_peer_access(topo::NvmlP2p nvml) {
  switch (nvml) {
    case topo::NvmlP2p::kOk: return PeerAccess::kNvmlYes;
    case topo::NvmlP2p::kNotSupported: return PeerAccess::kNvmlNo;
    case topo::NvmlP2p::kUnknown:
    case topo::NvmlP2p::kUnavailable: break;
  }
  return PeerAccess::kNotVisible;
}

PeerMarks unreachable_peers(const std::vector<uint64_t> &gpus, int me,
                            const std::function<PeerAccess(int)> &access) {
  PeerMarks marks;
  for (int q = 0; q < static_cast<int>(gpus.size()); ++q) {
    if (q == me || gpus[q] == gpus[me]) continue;
    const PeerAccess answer = access(q);
    if (answer == PeerAccess::kNo || answer == PeerAccess::kNvmlNo) marks.unreachable |= 1u << q;
    if (answer == PeerAccess::kNvmlNo) marks.by_nvml |= 1u << q;
  }
  return marks;
}

namespace {

bool lacks(const std::vector<PeerReach> &ranks, size_t from, size_t to) {
  return from != to && to < 32 && ((ranks[from].unreachable >> to) & 1u) != 0;
}

}  // namespace

std::string unreachable_reason(const std::vector<PeerReach> &ranks, const std::string &team) {
  size_t first_from = 0, first_to = 0;
  int pairs = 0;
  for (size_t p = 0; p < ranks.size(); ++p) {
    for (size_t q = 0; q < ranks.size(); ++q) {
      // A pair that both ranks report counts once.
      if (!lacks(ranks, p, q) || (q < p && lacks(ranks, q, p))) continue;
      if (pairs++ == 0) first_from = p, first_to = q;
    }
  }
  if (pairs == 0) return "";
  const PeerReach &from = ranks[first_from];
  const PeerReach &to = ranks[first_to];
  const std::string more =
      pairs > 1 ? strprintf(" (nor can %d more pairs of the host's GPUs)", pairs - 1) : "";
  const bool by_nvml = first_to < 32 && ((from.by_nvml >> first_to) & 1u) != 0;
  const char *who = by_nvml ? "NVML's nvmlDeviceGetP2PStatus: CUDA_VISIBLE_DEVICES hides that "
                              "GPU from the rank; `nvidia-smi topo -p2p rw` says why"
                            : "cudaDeviceCanAccessPeer";
  return strprintf(
      "%s GPU %s cannot reach rank %d's GPU %s by peer access (%s)%s: GPU "
      "collectives are off for team '%s'",
      from.name.c_str(), from.bus_id.c_str(), to.rank, to.bus_id.c_str(), who, more.c_str(),
      team.c_str());
}

std::string ipc_failure_hint(PeerAccess access, const std::string &nvml_detail) {
  const std::string nvml_said = nvml_detail.empty() ? "" : " (" + nvml_detail + ")";
  switch (access) {
    case PeerAccess::kNotVisible:
      return "that GPU is not visible to this rank (CUDA_VISIBLE_DEVICES) and NVML could not "
             "tell whether the pair has peer access" +
             nvml_said +
             ", so it could not be checked before mapping: check the pair with `nvidia-smi "
             "topo -p2p rw`; where NVML answers, or every rank sees all of the host's GPUs, a "
             "pair without peer access turns GPU collectives off instead of failing the team";
    case PeerAccess::kNvmlYes:
      return "NVML reported peer access to that GPU, which is not visible to this rank: check "
             "that the ranks share the host's IPC and PID namespaces (containers), and the pair "
             "with `nvidia-smi topo -p2p rw`";
    case PeerAccess::kYes:
    case PeerAccess::kNo:
    case PeerAccess::kNvmlNo: break;
  }
  return "CUDA reported peer access to that GPU (or both ranks use it): check that the ranks "
         "share the host's IPC and PID namespaces (containers), and the pair with "
         "`nvidia-smi topo -p2p rw`";
}

}  // namespace cohort::tl_gpu
