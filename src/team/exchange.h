// One exchange of team creation: every rank posts a record for a phase (its status, a detail,
// the phase's payload) through the OOB allgather and polls for everyone's.  It ends in one of
// three ways, alike on every rank: every rank succeeded, the first rank that failed is named
// (every rank holds the same records), or the deadline passed (the missing ranks are named,
// and the others told this rank gave up, so none waits out its own timeout).
#pragma once

#include <memory>

#include "core/oob.h"
#include "team/phase.h"
#include "team/team_info.h"

namespace cohort {

class Exchange {
 public:
  Exchange(const TeamInfo &info, double timeout_s) : info_(info), timeout_s_(timeout_s) {}

  // Posts this rank's record; `local` is its status (its detail from last_error()).  With
  // `notices`, the OOB also carries "gave up" notices (the team's private communicator).
  Status post(Oob &oob, Phase phase, const char *step, Status local, const void *payload,
              size_t payload_len, bool notices);
  // COHORT_SUCCESS when every rank reported success, COHORT_IN_PROGRESS, or the failure.
  Status poll();
  bool active() const { return request_ != nullptr; }
  void finish() { request_.reset(); }
  Phase phase() const { return phase_; }
  // Rank r's payload, once poll() succeeded; payloads are stride() bytes apart.
  const char *payload_of(int r) const;
  size_t stride() const { return record_len_; }

  // Tells the other ranks on the private communicator that this rank gave up (its status and
  // last_error()); returns `status`.
  Status notify_gave_up(Status status);
  // Fails when a peer sent notice that it gave up (see notify_gave_up).
  Status poll_notices();

 private:
  Status agreed_failure(const char *records) const;
  Status timeout_failure();

  const TeamInfo &info_;
  double timeout_s_;
  Oob *oob_ = nullptr;
  std::unique_ptr<OobRequest> request_;
  Phase phase_ = Phase::kCheckIn;
  const char *step_ = "";  // "arrive", "connect", ... for messages
  size_t record_len_ = 0;
  int64_t deadline_ns_ = 0;
  bool notices_ = false;
};

}  // namespace cohort
