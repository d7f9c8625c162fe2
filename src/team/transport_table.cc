#include "team/transport_table.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/build_info.h"
#include "tl_host/shm_transport.h"
#include "tl_ucx/ucx_transport.h"
#if COHORT_HAVE_CUDA
#include "tl_gpu/gpu_transport.h"
#endif

namespace cohort {
namespace {

const TransportInfo kBuiltIn[] = {
    {"shm", "shared-memory mailboxes between the ranks of one host", tl_host::make_shm_transport},
    {"ucx", "UCX tag messages between hosts", tl_ucx::make_ucx_transport},
};

struct Registered {
  std::mutex mutex;
  std::vector<TransportInfo> infos;
};

Registered &registered() {
  static auto *r = new Registered();  // outlives static destructors
  return *r;
}

}  // namespace

std::vector<TransportInfo> transport_table() {
  Registered &r = registered();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<TransportInfo> table = r.infos;
  table.insert(table.end(), std::begin(kBuiltIn), std::end(kBuiltIn));
  return table;
}

void register_transport(const TransportInfo &info) {
  unregister_transport(info.name);
  Registered &r = registered();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.infos.insert(r.infos.begin(), info);
}

void unregister_transport(const char *name) {
  Registered &r = registered();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::erase_if(r.infos, [&](const TransportInfo &i) { return strcmp(i.name, name) == 0; });
}

std::unique_ptr<tl::DeviceTransport> make_device_transport() {
#if COHORT_HAVE_CUDA
  return tl_gpu::make_gpu_transport();
#else
  return nullptr;
#endif
}

TransportInfo device_transport_info() {
#if COHORT_HAVE_CUDA
  return {"cuda-ipc",
          "GPU windows of a host's ranks mapped through CUDA IPC (also ranks sharing a GPU "
          "under MPS); kernels on the caller's stream",
          nullptr};
#else
  return {"", "", nullptr};
#endif
}

}  // namespace cohort
