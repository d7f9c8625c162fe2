// Buffers registered with a team (cohort_mem_register), as the CUDA IPC transport keeps them:
// this rank's, found by address for every call on device memory, and every local rank's,
// mapped here through CUDA IPC into the device table kernels read (DeviceTeam::registered).
//
// A registration is collective: every local rank prepares its record, the team exchanges
// them, and every rank adds the same registration into the same slot (the lowest free one:
// every rank adds and removes in the same order).  A peer's allocation is opened once
// however many of its registrations lie in it, and closed with the last of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/device_team.h"
#include "tl_gpu/device_memory.h"
#include "tl_gpu/reg_cache.h"

namespace cohort::tl_gpu {

// One rank's part of a registration's exchange (trivially copyable: it travels as bytes).
struct RegistrationRecord {
  cudaIpcMemHandle_t allocation;  // the CUDA allocation holding the buffer
  uint64_t offset;                // of the buffer in it
  uint64_t bytes;
  int32_t status;  // COHORT_SUCCESS, or why this rank could not register its buffer
  int32_t reserved;
  char why[200];
};

class Registrations {
 public:
  Registrations() = default;
  Registrations(const Registrations &) = delete;
  Registrations &operator=(const Registrations &) = delete;

  // This rank's record for [buffer, buffer + bytes): device memory of `device` that CUDA IPC
  // can share (cudaMalloc's); a refusal is in the record for every rank to name.
  static void prepare(void *buffer, size_t bytes, int device, RegistrationRecord *record);
  // What the driver says of the allocation holding `ptr`, for the registration cache.
  static Probe probe(const void *ptr, int device, Allocation *out);

  // Every local rank's record, by local rank (`me` is this one, whose `buffer` it is;
  // `describe` names a local rank in errors): maps the peers' buffers and fills the lowest
  // free slot, *slot.  Refused alike on every rank when some rank's record holds a refusal, or
  // every slot is taken.
  Status add(const std::vector<RegistrationRecord> &records, int me, void *buffer,
             const std::vector<std::string> &describe, int *slot);
  // A registration of one local rank's allocation alone (the registration cache): `owner`'s
  // record, mapped here unless `owner` is `me` (then `own` is the allocation).  It takes the
  // lowest free slot as add() does, even when mapping fails here: the slots stay the same on
  // every rank, and the caller removes the slot everywhere once every rank's outcome is known.
  Status add_owned(const RegistrationRecord &record, int owner, int me, void *own,
                   const std::string &who, int *slot);
  // Releases `slot` (every rank's kernels that used it have ended).
  Status remove(int slot);
  // This rank's buffer of `slot` is no longer found (the slot stays taken until removed).
  void hide(int slot);
  // The local rank whose allocation alone `slot` holds (add_owned), else -1.
  int owner(int slot) const { return slot_used(slot) ? entries_[slot].owner : -1; }

  // Where [ptr, ptr + bytes) lies among this rank's registered buffers; slot -1 when in none.
  kernels::BufferRef find(const void *ptr, size_t bytes) const;
  // The device table (DeviceTeam::registered): null before the first registration.
  char *const *table() const { return reinterpret_cast<char *const *>(table_.get()); }
  bool slot_used(int slot) const;
  size_t device_bytes() const { return table_.get() != nullptr ? kTableBytes : 0; }
  void clear();

 private:
  static constexpr size_t kTableBytes =
      sizeof(char *) * kernels::kMaxRegistrations * kernels::kMaxLocalRanks;
  struct Entry {
    bool used = false;
    const char *begin = nullptr;  // this rank's buffer
    size_t bytes = 0;
    int owner = -1;  // add_owned's owner; -1: every local rank's buffer (add)
    std::vector<std::shared_ptr<IpcMapping>> peers;  // the allocations held open for it
  };
  Status map_peer(const RegistrationRecord &record, int q, const std::string &who,
                  std::shared_ptr<IpcMapping> *out);
  Status free_slot(const char *call, int *slot) const;
  Status write_row(int slot, char *const *row, Entry entry);

  std::vector<Entry> entries_;
  // A peer's allocation opened here, by (local rank, handle bytes): shared by registrations.
  std::map<std::pair<int, std::string>, std::weak_ptr<IpcMapping>> open_;
  DeviceAllocation table_;
};

}  // namespace cohort::tl_gpu
