// Registered buffers (cohort_mem_register / cohort_mem_deregister): collective over the
// team.  Every rank's record travels in one host allgather, so a buffer one rank cannot
// register is refused on every rank, naming that rank and why; the device transport then
// maps the peers' buffers, into the same slot on every rank, and a second allgather tells
// every rank whether every rank could (else none keeps it).
#include <cstdint>
#include <string>
#include <vector>

#include "team/coll_front.h"

namespace cohort {
namespace {

// `call`'s first check: the team usable (`usable`), and a device transport built in.
Status registering(const char *call, Status usable, bool have_device) {
  if (is_error(usable) || have_device) return usable;
  return failf(COHORT_ERR_NOT_SUPPORTED, "%s: this Cohort was built without CUDA", call);
}

}  // namespace

Status CollFront::register_buffer(void *buffer, size_t bytes, int *slot) {
  Status s =
      registering("cohort_mem_register", usable_for("cohort_mem_register"), device_ != nullptr);
  if (is_error(s)) return s;
  if (s = device_->registrable(); is_error(s)) return s;
  const size_t record_bytes = device_->registration_record_bytes();
  std::vector<char> mine(record_bytes), all(record_bytes * info_.size);
  device_->prepare_registration(buffer, bytes, mine.data());
  if (s = allgather_bytes(mine.data(), all.data(), record_bytes); is_error(s)) return s;
  const Status added =
      device_->add_registration(buffer, tl::RecordTable{all.data(), record_bytes, 0}, slot);
  const std::string why = is_error(added) ? last_error() : "";
  // Mapping a peer's buffer can fail on one rank alone: every rank learns of it and takes its
  // registration back, so that the slots stay the same on every rank.
  int32_t status = added;
  std::vector<int32_t> statuses(info_.size);
  if (s = allgather_bytes(&status, statuses.data(), sizeof(status)); is_error(s)) return s;
  if (is_error(added)) return fail(added, why);
  for (int r = 0; r < info_.size; ++r) {
    if (statuses[r] == COHORT_SUCCESS) continue;
    device_->remove_registration(*slot);
    return failf(static_cast<Status>(statuses[r]),
                 "cohort_mem_register: %s could not map the other ranks' buffers (its own "
                 "message says why); no rank keeps the registration",
                 info_.describe(r).c_str());
  }
  return COHORT_SUCCESS;
}

Status CollFront::allgather_bytes(const void *mine, void *all, size_t bytes) {
  CollCall exchange;
  exchange.collective = coll::Collective::kAllgather;
  exchange.src = mine;
  exchange.dst = all;
  exchange.count = bytes;
  exchange.dtype = COHORT_INT8;
  return run(exchange);
}

bool CollFront::note_cached(const void *buffer, size_t bytes) {
  return device_ != nullptr && device_->cache_note(buffer, bytes);
}

bool CollFront::cache_wanted() { return device_ != nullptr && device_->cache_wanted(); }

// Every rank's block of additions and evictions in one allgather; every rank applies them all
// in rank order (so the slots stay the same everywhere), and a second allgather of what each
// could not map takes those additions back on every rank.  A team whose device transport is
// off (the same on every rank) has nothing to sync.
Status CollFront::sync_cache() {
  Status s = usable_for("cohort_mem_cache_sync");
  if (is_error(s) || device_ == nullptr || !device_->active()) return s;
  const size_t block_bytes = device_->cache_block_bytes();
  std::vector<char> mine(block_bytes), all(block_bytes * info_.size);
  device_->cache_prepare(mine.data());
  if (s = allgather_bytes(mine.data(), all.data(), block_bytes); is_error(s)) return s;
  uint32_t failed = 0;
  s = device_->cache_apply(tl::RecordTable{all.data(), block_bytes, 0}, &failed);
  if (is_error(s)) return s;
  std::vector<uint32_t> outcomes(info_.size);
  if (s = allgather_bytes(&failed, outcomes.data(), sizeof(failed)); is_error(s)) return s;
  device_->cache_settle(outcomes);
  return COHORT_SUCCESS;
}

Status CollFront::deregister_buffer(int slot) {
  Status s =
      registering("cohort_mem_deregister", usable_for("cohort_mem_deregister"), device_ != nullptr);
  if (is_error(s)) return s;
  // Every rank's kernels that read or wrote the buffers have ended before any rank returns
  // (the caller may free its buffer then).
  if (s = device_->quiesce(); is_error(s)) return s;
  CollCall barrier;
  barrier.collective = coll::Collective::kBarrier;
  if (s = run(barrier); is_error(s)) return s;
  return device_->remove_registration(slot);
}

}  // namespace cohort
