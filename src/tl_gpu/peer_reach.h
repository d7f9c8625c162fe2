// Whether the GPUs of a host's ranks reach each other by peer access, which the CUDA IPC
// transport needs (a rank's kernels read and write the other ranks' windows).  Each rank asks
// CUDA about the peers' GPUs it sees and puts the answer, a mask over local ranks, into its
// device-setup record; every rank then decides from all the records, so all decide alike.
// Needs no CUDA (test/gtest/test_peer_reach.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cohort::tl_gpu {

// What this process can tell of its GPU's access to a peer's GPU.
enum class PeerAccess : uint8_t {
  kYes,
  kNo,          // cudaDeviceCanAccessPeer says no, or cannot answer
  kNotVisible,  // the peer's GPU is not among this process's devices (CUDA_VISIBLE_DEVICES)
};

// This rank's part of the decision: bit q is set where local rank q's GPU is another than
// this rank's (`gpus`: TeamView::gpu by local rank; `me`: this rank's local rank) and
// `access(q)` says kNo.  Ranks sharing a GPU reach each other without asking.
//
// A GPU that is not visible here cannot be asked, and counts as reachable, as NCCL's p2p
// transport counts it (p2pCanConnect, src/transport/p2p.cc: "CUDA 10.1 and later can use P2P
// with invisible devices"): cudaIpcOpenMemHandle maps another GPU's memory whether this process
// sees that GPU or not, and counting such peers as unreachable would turn GPU collectives off
// wherever each rank sees only its own GPU (Slurm's --gpus-per-task), NVLink hosts included.
// Where such a pair truly lacks peer access, the mapping fails and team creation says so.
uint32_t unreachable_peers(const std::vector<uint64_t> &gpus, int me,
                           const std::function<PeerAccess(int)> &access);

// One local rank as the decision names it, with its device-setup record's mask.
struct PeerReach {
  int rank = 0;              // team rank
  std::string name;          // "rank 1 (host x, pid 42)"
  std::string bus_id;        // its GPU's, "0000:41:00.0"
  uint32_t unreachable = 0;  // its unreachable_peers()
};

// Empty where every local rank's GPU reaches every other's; else why GPU collectives are off
// for `team`, naming the first pair (both ranks and GPUs) and counting the others.
std::string unreachable_reason(const std::vector<PeerReach> &ranks, const std::string &team);

// What to check when mapping a peer's window failed although the pair passed the decision,
// given what this rank found of its access to the peer's GPU.
std::string ipc_failure_hint(PeerAccess access);

}  // namespace cohort::tl_gpu
