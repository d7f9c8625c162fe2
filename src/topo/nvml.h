// NVLinks, and peer access between GPUs, from NVML.  The library is dlopen'ed
// (libnvidia-ml.so.1 comes with the driver, not the toolkit), so a host without a driver, or
// a driver without NVML, still builds a model: the caller records that NVLinks are unknown.
// The aggregation into model links and the reading of P2P statuses are pure functions so that
// they can be tested without NVML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/topo.h"

namespace cohort::topo {

// What the far end of an NVLink is.  kUnknown: NVML too old to say (no
// nvmlDeviceGetNvLinkRemoteDeviceType); the bus id then decides.
enum class NvLinkPeer : uint8_t { kGpu, kSwitch, kCpu, kUnknown };

// One active NVLink of a GPU.
struct NvLinkEnd {
  NvLinkPeer peer = NvLinkPeer::kUnknown;
  std::string bus_id;  // the far end's, normalized; may be empty for a switch
};

// What NVML says about one GPU.
struct NvmlGpu {
  std::string bus_id;  // normalized
  int sm = 0;          // compute capability x 10; 0 unknown
  std::vector<NvLinkEnd> links;
};

// Asks NVML about the GPUs `bus_ids` (normalized).  A GPU NVML does not know is left out of
// `out`.  Returns false with the reason in `why` ("libnvidia-ml.so.1: cannot open shared
// object file ...") when NVML cannot be loaded or initialised.
bool query_nvml(const std::vector<std::string> &bus_ids, std::vector<NvmlGpu> *out,
                std::string *why);

// Adds the NVLinks of `gpus` to `topo`, whose GPU nodes are matched by bus id: one kNvLink per
// GPU pair (both ends report it; the larger count wins), and one per GPU to the "nvswitch"
// node (added when some GPU reaches the fabric) with the GPU's count of switch links.  Each
// link's bandwidth is count x nvlink_bw(sm), with the smaller sm of a pair.  A link of
// unknown peer leads to the fabric unless its bus id is a GPU of the model.  Links to CPUs
// (IBM NPU) and to GPUs absent from the model are left out.
void add_nvlinks(const std::vector<NvmlGpu> &gpus, Topology *topo);

// What NVML says of peer access between two GPUs.  Unlike the CUDA runtime, NVML sees every
// GPU of the host whatever CUDA_VISIBLE_DEVICES hides.
enum class NvmlP2p : uint8_t {
  kOk,            // NVML_P2P_STATUS_OK for P2P reads and for P2P writes
  kNotSupported,  // a definite no for reads or writes: chipset, GPU, IOH topology, registry key
                  // or NOT_SUPPORTED
  kUnknown,       // NVML_P2P_STATUS_UNKNOWN (or a status newer than this code), and no definite no
  kUnavailable,   // NVML could not be asked: not loaded or initialised, a GPU it does not know,
                  // a failed call
};

struct NvmlP2pAnswer {
  NvmlP2p status = NvmlP2p::kUnavailable;
  std::string detail;  // NVML's words for any answer but kOk ("P2P reads: not supported by
                       // the chipset", "nvmlInit_v2: Driver Not Loaded")
};

// NVML's answer for peer access between the GPU `bus_id` and each of `peers` (bus ids as
// sysfs writes them, "0000:41:00.0"), from nvmlDeviceGetP2PStatus with
// NVML_P2P_CAPS_INDEX_READ and _WRITE; one NVML session for the pairs not asked before in this
// process (answers are kept).  Always one answer per peer: every one kUnavailable, with the
// reason, where NVML cannot be used.  Thread-safe.
std::vector<NvmlP2pAnswer> nvml_p2p(const std::string &bus_id,
                                    const std::vector<std::string> &peers);

// The answer from the two nvmlGpuP2PStatus_t values NVML gave for reads and for writes.
NvmlP2pAnswer p2p_answer(int read_status, int write_status);

}  // namespace cohort::topo
