// Whether the GPUs of a host's ranks reach each other by peer access, which the CUDA IPC
// transport needs (a rank's kernels read and write the other ranks' windows).  Each rank asks
// CUDA about the peers' GPUs it sees, and NVML about those it does not, and puts the answers,
// masks over local ranks, into its device-setup record; every rank then decides from all the
// records, so all decide alike.  Needs neither CUDA nor NVML (test/gtest/test_peer_reach.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topo/nvml.h"

namespace cohort::tl_gpu {

// What this process can tell of its GPU's access to a peer's GPU.
enum class PeerAccess : uint8_t {
  kYes,         // cudaDeviceCanAccessPeer says yes
  kNo,          // cudaDeviceCanAccessPeer says no, or cannot answer
  kNotVisible,  // the peer's GPU is not among this process's devices (CUDA_VISIBLE_DEVICES)
                // and NVML cannot tell (not there, failed, or P2P status UNKNOWN)
  kNvmlYes,     // not among this process's devices; NVML says P2P reads and writes are OK
  kNvmlNo,      // not among this process's devices; NVML says the pair lacks P2P reads or writes
};

// What NVML's answer makes of a peer's GPU that CUDA does not show this process.
//
// NVML sees every GPU of the host whatever CUDA_VISIBLE_DEVICES hides, so a pair is asked by
// bus id (nvmlDeviceGetP2PStatus, reads and writes, both of which NCCL's ncclTopoCheckP2p
// requires OK): a definite no (chipset, GPU, IOH topology, registry key, NOT_SUPPORTED) marks
// the peer.  Where NVML cannot tell (no NVML, a failed call, or NVML_P2P_STATUS_UNKNOWN, which
// is no verdict; NCCL, which has other transports to fall back on, reads UNKNOWN as no) the
// GPU counts as reachable, as NCCL's p2p transport counts an invisible GPU
// (p2pCanConnect, src/transport/p2p.cc: "CUDA 10.1 and later can use P2P with invisible
// devices"): cudaIpcOpenMemHandle maps another GPU's memory whether this process sees that GPU
// or not, and counting such peers as unreachable would turn GPU collectives off wherever each
// rank sees only its own GPU (Slurm's --gpus-per-task), NVLink hosts included.  Where such a
// pair truly lacks peer access, the mapping fails and team creation says so.
PeerAccess invisible_peer_access(topo::NvmlP2p nvml);

// This rank's part of the decision: bit q of `unreachable` is set where local rank q's GPU is
// another than this rank's and `access(q)` says kNo or kNvmlNo; of those, kNvmlNo also sets
// bit q of `by_nvml`.
struct PeerMarks {
  uint32_t unreachable = 0;
  uint32_t by_nvml = 0;
};

// `gpus`: TeamView::gpu by local rank; `me`: this rank's local rank.  Ranks sharing a GPU
// reach each other without asking.
PeerMarks unreachable_peers(const std::vector<uint64_t> &gpus, int me,
                            const std::function<PeerAccess(int)> &access);

// One local rank as the decision names it, with its device-setup record's masks.
struct PeerReach {
  int rank = 0;              // team rank
  std::string name;          // "rank 1 (host x, pid 42)"
  std::string bus_id;        // its GPU's, "0000:41:00.0"
  uint32_t unreachable = 0;  // its unreachable_peers()
  uint32_t by_nvml = 0;      // the bits of `unreachable` NVML's answer set
};

// Empty where every local rank's GPU reaches every other's; else why GPU collectives are off
// for `team`, naming the first pair (both ranks and GPUs) and who said so (CUDA or NVML), and
// counting the others.
std::string unreachable_reason(const std::vector<PeerReach> &ranks, const std::string &team);

// What to check when mapping a peer's window failed although the pair passed the decision,
// given what this rank found of its access to the peer's GPU and, for a GPU it does not see,
// NVML's words (why NVML could not tell).
std::string ipc_failure_hint(PeerAccess access, const std::string &nvml_detail = "");

}  // namespace cohort::tl_gpu
