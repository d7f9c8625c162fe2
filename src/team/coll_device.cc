// Collectives on GPU device memory: checked and chosen like the others (coll_checks.cc, the
// selection table), then handed to the device transport, which enqueues a kernel.  Blocking
// calls run on the transport's own stream and wait for it; a collective that a kernel
// abandoned (a peer past COHORT_COLL_TIMEOUT, an abort) stops the team like a failed host
// collective.
#include "team/coll_front.h"

namespace cohort {

Status CollFront::run_on_device(const CollCall &call, const coll::SelectRule &rule, void *stream,
                                bool blocking) {
  if (staged()) return run_staged(call, stream, blocking);
  const char *name = coll::collective_name(call.collective);
  if (!device_) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "%s on GPU device memory: this Cohort was built "
                 "without CUDA",
                 name);
  }
  coll::Call chosen = call;  // the call's record, completed with the selection's algorithm
  chosen.algorithm = rule.algorithm->id;
  void *target = blocking ? nullptr : (stream != nullptr ? stream : tl::kLegacyDefaultStream);
  Status s = device_->enqueue(chosen, target);
  if (!is_error(s) && blocking) s = device_->synchronize(nullptr, timeout_s_);
  if (s == COHORT_ERR_TIMEOUT || s == COHORT_ERR_ABORTED) {
    // The kernels of this team stopped mid-exchange: its windows hold a partial one.
    std::string why = last_error();
    stop(s, why, false);
    return fail(s, why);
  }
  return s;
}

}  // namespace cohort
