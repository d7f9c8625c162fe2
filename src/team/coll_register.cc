// Registered buffers (cohort_mem_register / cohort_mem_deregister): collective over the
// team.  Every rank's record travels in one host allgather, so a buffer one rank cannot
// register is refused on every rank, naming that rank and why; the device transport then
// maps the peers' buffers, into the same slot on every rank.
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
  return device_->add_registration(buffer, tl::RecordTable{all.data(), record_bytes, 0}, slot);
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
