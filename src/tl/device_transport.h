// The transport of collectives on GPU device memory: set up in the device-setup phase of
// team creation (after connect), it owns this rank's device memory for the team and maps the
// other local ranks', and enqueues collective kernels on the caller's stream.  The team names
// no transport: registry.h gives the one there is (none in a build without CUDA).
//
// Lifecycle, driven by the team:
//   record_bytes + post   device-setup phase, before its exchange: allocate, export
//   connect               after the exchange, with every rank's record: map the peers' (none
//                         where two of the host's GPUs lack peer access: alike on every rank)
//   enqueue               per collective: check it fits, launch on the stream, return
//   synchronize           blocking calls: wait for the stream, failing on a stuck peer
//   abort                 any thread: kernels of this team stop waiting and end
//   registrations         cohort_mem_register / deregister (team/coll_register.cc), collective
// Streams are opaque here (a cudaStream_t; null: the transport's own stream).
// The caller's "default stream" (a null cudaStream_t) is passed as kLegacyDefaultStream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/call.h"
#include "core/status.h"
#include "tl/transport.h"

namespace cohort::tl {

// cudaStreamLegacy: CUDA's default stream, for a caller that passed a null stream.
inline void *const kLegacyDefaultStream = reinterpret_cast<void *>(0x1);

class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;
  virtual const char *name() const = 0;

  // Whether this team runs collectives on device memory, and if not why ("rank 2 (host h,
  // pid 7) has no GPU"): the same answer on every rank, decided from the view alone.
  virtual bool wanted(const TeamView &team, std::string *why) const = 0;
  // After connect: whether this team's collectives on device memory run here (the same on
  // every rank); when not, the team runs them through host memory (team/coll_staged.cc).
  virtual bool active() const = 0;
  virtual size_t record_bytes(const TeamView &team) const = 0;
  virtual Status post(const TeamView &team, void *record) = 0;
  virtual Status connect(const TeamView &team, const RecordTable &records) = 0;

  // COHORT_ERR_NOT_SUPPORTED naming what is missing when `call` (its algorithm set by the
  // selection) cannot run here (an algorithm this transport lacks, a size over its limit);
  // else enqueues it on `stream`.
  virtual Status enqueue(const coll::Call &call, void *stream) = 0;
  // Waits until `stream`'s work is done; COHORT_ERR_TIMEOUT naming the peer a kernel waited
  // for past `timeout_s`, COHORT_ERR_ABORTED after abort(), COHORT_ERR_CUDA for CUDA's errors.
  virtual Status synchronize(void *stream, double timeout_s) = 0;
  // The first fault a kernel of this team reported (its call and peer), if any.
  virtual Status fault() const = 0;
  virtual void abort() = 0;

  // Device memory this rank holds for the team, in bytes, and per peer.
  virtual size_t memory_bytes() const = 0;

  // Buffer registration, around the team's exchange of records.  registrable(): whether this
  // team registers buffers at all (the same answer on every rank), COHORT_ERR_NOT_SUPPORTED
  // saying why not.  prepare_registration(): this rank's record for its buffer; a buffer it
  // cannot register is refused in the record, for every rank to name.  add_registration():
  // with every rank's record, maps the peers' buffers; *slot is the same on every rank.
  virtual Status registrable() const = 0;
  virtual size_t registration_record_bytes() const = 0;
  virtual void prepare_registration(void *buffer, size_t bytes, void *record) = 0;
  virtual Status add_registration(void *buffer, const RecordTable &records, int *slot) = 0;
  // Waits until this rank's kernels of the team ended (before a deregistration's barrier).
  virtual Status quiesce() = 0;
  virtual Status remove_registration(int slot) = 0;

  // The registration cache (tl_gpu/reg_cache.h), for libraries that pass their users' buffers
  // (the Open MPI component).  cache_note(): a call's use of [ptr, ptr + bytes) on this rank:
  // true when its allocation is registered, else it may be queued for the next sync.
  // cache_wanted(): whether this rank has allocations to register or slots to evict (it looks
  // at every entry's allocation).  The sync is collective (CollFront::sync_cache), on a team
  // whose transport is active: cache_prepare() fills this rank's block of
  // cache_block_bytes(); cache_apply() applies every rank's blocks, alike on every rank, and
  // sets a bit in *failed for each addition it could not map; cache_settle() takes back, on
  // every rank, the additions some rank failed.
  virtual bool cache_note(const void *ptr, size_t bytes) = 0;
  virtual bool cache_wanted() = 0;
  virtual size_t cache_block_bytes() const = 0;
  virtual void cache_prepare(void *block) = 0;
  virtual Status cache_apply(const RecordTable &blocks, uint32_t *failed) = 0;
  virtual void cache_settle(const std::vector<uint32_t> &failed) = 0;
};

}  // namespace cohort::tl
