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
  CollCall exchange;
  exchange.collective = coll::Collective::kAllgather;
  exchange.src = mine.data();
  exchange.dst = all.data();
  exchange.count = record_bytes;
  exchange.dtype = COHORT_INT8;
  if (s = run(exchange); is_error(s)) return s;
  const Status added =
      device_->add_registration(buffer, tl::RecordTable{all.data(), record_bytes, 0}, slot);
  const std::string why = is_error(added) ? last_error() : "";
  // Mapping a peer's buffer can fail on one rank alone: every rank learns of it and takes its
  // registration back, so that the slots stay the same on every rank.
  int32_t status = added;
  std::vector<int32_t> statuses(info_.size);
  CollCall outcome;
  outcome.collective = coll::Collective::kAllgather;
  outcome.src = &status;
  outcome.dst = statuses.data();
  outcome.count = 1;
  outcome.dtype = COHORT_INT32;
  if (s = run(outcome); is_error(s)) return s;
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
