// registrations.h: records, slots, the peers' mappings and the device table.
#include "tl_gpu/registrations.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "core/cuda_driver.h"
#include "tl_gpu/cuda_call.h"

namespace cohort::tl_gpu {
namespace {

namespace k = cohort::kernels;

void refuse(RegistrationRecord *record, Status status, const std::string &why) {
  record->status = status;
  std::snprintf(record->why, sizeof(record->why), "%s", why.c_str());
}

// The CUDA allocation holding `ptr` (cuMemGetAddressRange): the runtime does not say.
bool allocation_of(const void *ptr, uintptr_t *base, size_t *size) {
  using GetRange = int (*)(uintptr_t *, size_t *, uintptr_t);
  static const auto get_range = [] {
    void *lib = driver_library();
    return lib != nullptr ? reinterpret_cast<GetRange>(dlsym(lib, "cuMemGetAddressRange_v2"))
                          : nullptr;
  }();
  return get_range != nullptr &&
         get_range(base, size, reinterpret_cast<uintptr_t>(ptr)) == 0 /* CUDA_SUCCESS */;
}

std::string handle_key(const cudaIpcMemHandle_t &handle) {
  return std::string(reinterpret_cast<const char *>(&handle), sizeof(handle));
}

}  // namespace

void Registrations::prepare(void *buffer, size_t bytes, int device, RegistrationRecord *record) {
  std::memset(record, 0, sizeof(*record));
  char where[64];
  std::snprintf(where, sizeof(where), "buffer %p (%zu bytes)", buffer, bytes);
  if (buffer == nullptr || bytes == 0) {
    return refuse(record, COHORT_ERR_INVALID_ARG,
                  std::string(where) + ": a registration needs a buffer and bytes > 0");
  }
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, buffer) != cudaSuccess ||
      attributes.type != cudaMemoryTypeDevice) {
    cudaGetLastError();  // not sticky: a host pointer is an answer, not a fault
    return refuse(record, COHORT_ERR_INVALID_ARG,
                  std::string(where) + " is not CUDA device memory (cudaMalloc'd)");
  }
  if (attributes.device != device) {
    return refuse(record, COHORT_ERR_INVALID_ARG,
                  strprintf("%s is memory of GPU %d, the team's GPU is %d", where,
                            attributes.device, device));
  }
  uintptr_t base = 0;
  size_t size = 0;
  const auto begin = reinterpret_cast<uintptr_t>(buffer);
  if (!allocation_of(buffer, &base, &size) || begin + bytes > base + size) {
    return refuse(record, COHORT_ERR_INVALID_ARG,
                  strprintf("%s runs past the end of its CUDA allocation (%zu bytes from %p)",
                            where, size, reinterpret_cast<void *>(base)));
  }
  cudaError_t err = cudaIpcGetMemHandle(&record->allocation, reinterpret_cast<void *>(base));
  if (err != cudaSuccess) {
    cudaGetLastError();
    return refuse(record, COHORT_ERR_NOT_SUPPORTED,
                  strprintf("%s cannot be shared through CUDA IPC (%s): register memory from "
                            "cudaMalloc, not from a cudaMallocAsync pool or cuMemCreate",
                            where, cudaGetErrorString(err)));
  }
  record->offset = begin - base;
  record->bytes = bytes;
  record->status = COHORT_SUCCESS;
}

Probe Registrations::probe(const void *ptr, int device, Allocation *out) {
  using GetAttributes = int (*)(unsigned, int *, void **, uintptr_t);
  static const auto get = [] {
    void *lib = driver_library();
    return lib != nullptr ? reinterpret_cast<GetAttributes>(dlsym(lib, "cuPointerGetAttributes"))
                          : nullptr;
  }();
  if (get == nullptr) return Probe::kUnknown;
  // CU_POINTER_ATTRIBUTE_: MEMORY_TYPE, DEVICE_ORDINAL, BUFFER_ID, RANGE_START_ADDR,
  // RANGE_SIZE, IS_LEGACY_CUDA_IPC_CAPABLE.
  int attributes[] = {2, 9, 7, 11, 12, 10};
  unsigned memory_type = 0;
  int ordinal = -1, ipc_capable = 0;
  unsigned long long id = 0;
  uintptr_t start = 0;
  size_t size = 0;
  void *data[] = {&memory_type, &ordinal, &id, &start, &size, &ipc_capable};
  if (get(6, attributes, data, reinterpret_cast<uintptr_t>(ptr)) != 0 /* CUDA_SUCCESS */ ||
      memory_type != 2 /* CU_MEMORYTYPE_DEVICE */ || ordinal != device || size == 0) {
    return Probe::kUnknown;
  }
  *out = Allocation{start, size, id};
  return ipc_capable != 0 ? Probe::kShareable : Probe::kUnshareable;
}

Status Registrations::map_peer(const RegistrationRecord &record, int q, const std::string &who,
                               std::shared_ptr<IpcMapping> *out) {
  const auto key = std::make_pair(q, handle_key(record.allocation));
  if (auto it = open_.find(key); it != open_.end()) {
    if ((*out = it->second.lock())) return COHORT_SUCCESS;
  }
  auto mapping = std::make_shared<IpcMapping>();
  const std::string what = "mapping the registered buffer of " + who;
  Status s = mapping->open(record.allocation, what.c_str());
  if (is_error(s)) return s;
  open_[key] = mapping;
  *out = std::move(mapping);
  return COHORT_SUCCESS;
}

Status Registrations::free_slot(const char *call, int *slot) const {
  int free = 0;
  while (free < static_cast<int>(entries_.size()) && entries_[free].used) ++free;
  if (free >= k::kMaxRegistrations) {
    return failf(COHORT_ERR_NO_MEMORY,
                 "%s: the team holds %d registrations, the most it can; deregister buffers no "
                 "longer used",
                 call, k::kMaxRegistrations);
  }
  *slot = free;
  return COHORT_SUCCESS;
}

// Keeps `entry` in `slot` and writes its row of the device table (made first).  The slot is
// taken even when that fails (add() gives it back; add_owned()'s caller removes it).
Status Registrations::write_row(int slot, char *const *row, Entry entry) {
  if (slot == static_cast<int>(entries_.size())) entries_.emplace_back();
  entries_[slot] = std::move(entry);
  if (table_.get() == nullptr) {
    Status s = table_.allocate(kTableBytes, "allocating the team's table of registered buffers");
    if (!is_error(s)) s = cuda_status(cudaStreamSynchronize(cudaStreamLegacy), "zeroing it");
    if (is_error(s)) return s;
  }
  const size_t row_bytes = sizeof(char *) * k::kMaxLocalRanks;
  return cuda_status(
      cudaMemcpy(table_.get() + row_bytes * slot, row, row_bytes, cudaMemcpyHostToDevice),
      "writing a registration into the team's table");
}

Status Registrations::add(const std::vector<RegistrationRecord> &records, int me, void *buffer,
                          const std::vector<std::string> &describe, int *slot) {
  for (size_t q = 0; q < records.size(); ++q) {
    if (records[q].status != COHORT_SUCCESS) {
      return failf(static_cast<Status>(records[q].status), "cohort_mem_register: %s: %s",
                   describe[q].c_str(), records[q].why);
    }
  }
  int free = -1;
  Status s = free_slot("cohort_mem_register", &free);
  if (is_error(s)) return s;
  Entry entry;
  entry.used = true;
  entry.begin = static_cast<const char *>(buffer);
  entry.bytes = records[me].bytes;
  char *row[k::kMaxLocalRanks] = {};
  row[me] = static_cast<char *>(buffer);
  for (int q = 0; q < static_cast<int>(records.size()); ++q) {
    if (q == me) continue;
    std::shared_ptr<IpcMapping> mapping;
    s = map_peer(records[q], q, describe[q], &mapping);
    if (is_error(s)) return s;
    row[q] = mapping->get() + records[q].offset;
    entry.peers.push_back(std::move(mapping));
  }
  s = write_row(free, row, std::move(entry));
  if (is_error(s)) {
    entries_[free] = Entry{};
    return s;
  }
  *slot = free;
  return COHORT_SUCCESS;
}

Status Registrations::add_owned(const RegistrationRecord &record, int owner, int me, void *own,
                                const std::string &who, int *slot) {
  Status s = free_slot("the registration cache", slot);
  if (is_error(s)) return s;
  Entry entry;
  entry.used = true;
  entry.owner = owner;
  char *row[k::kMaxLocalRanks] = {};
  if (owner == me) {
    entry.begin = static_cast<const char *>(own);
    entry.bytes = record.bytes;
    row[me] = static_cast<char *>(own);
  } else {
    std::shared_ptr<IpcMapping> mapping;
    s = map_peer(record, owner, who, &mapping);
    if (!is_error(s)) {
      row[owner] = mapping->get() + record.offset;
      entry.peers.push_back(std::move(mapping));
    }
  }
  // Taken even when mapping failed here, so that every rank's next slot stays the same.
  const Status written = write_row(*slot, row, std::move(entry));
  return is_error(s) ? s : written;
}

void Registrations::hide(int slot) {
  if (!slot_used(slot)) return;
  entries_[slot].begin = nullptr;
  entries_[slot].bytes = 0;
}

bool Registrations::slot_used(int slot) const {
  return slot >= 0 && slot < static_cast<int>(entries_.size()) && entries_[slot].used;
}

Status Registrations::remove(int slot) {
  if (!slot_used(slot)) {
    return failf(COHORT_ERR_INVALID_ARG, "registration slot %d is not in use", slot);
  }
  entries_[slot] = Entry{};  // closes the peers' allocations no other registration holds
  for (auto it = open_.begin(); it != open_.end();) {
    it = it->second.expired() ? open_.erase(it) : std::next(it);
  }
  // The row stays as it was: no kernel reads it until the slot is registered again.
  return COHORT_SUCCESS;
}

kernels::BufferRef Registrations::find(const void *ptr, size_t bytes) const {
  const auto *p = static_cast<const char *>(ptr);
  for (size_t slot = 0; slot < entries_.size(); ++slot) {
    const Entry &e = entries_[slot];
    if (e.used && e.begin != nullptr && p >= e.begin && bytes <= e.bytes &&
        p - e.begin <= static_cast<ptrdiff_t>(e.bytes - bytes)) {
      return kernels::BufferRef{static_cast<int32_t>(slot), 0, static_cast<uint64_t>(p - e.begin)};
    }
  }
  return kernels::BufferRef{};
}

void Registrations::clear() {
  entries_.clear();
  open_.clear();
  table_.reset();
}

}  // namespace cohort::tl_gpu
