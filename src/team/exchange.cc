#include "team/exchange.h"

#include <cstring>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "team/rank_list.h"

namespace cohort {
namespace {

// What the missing ranks of a timed-out exchange did not do, and why.
struct MissingText {
  const char *what;
  const char *why;
};

MissingText missing_text(const char *step) {
  // A team over a unique id or a caller's OOB checks in with its first exchange.
  if (strcmp(step, "arrive") == 0 || strcmp(step, "check-in") == 0) {
    return {"never arrived", "Did every rank call team creation?"};
  }
  return {"did not reach this phase", "They are stuck or failed in the previous phase, or exited."};
}

}  // namespace

Status Exchange::post(Oob &oob, Phase phase, const char *step, Status local, const void *payload,
                      size_t payload_len, bool notices) {
  std::vector<char> record(sizeof(PhaseHeader) + payload_len, 0);
  PhaseHeader header = phase_header(phase, local);
  std::memcpy(record.data(), &header, sizeof(header));
  if (payload_len > 0) std::memcpy(record.data() + sizeof(header), payload, payload_len);
  oob_ = &oob;
  phase_ = phase;
  step_ = step;
  notices_ = notices;
  record_len_ = record.size();
  deadline_ns_ = deadline_after(timeout_s_);
  Status s = oob.allgather(record.data(), record.size(), phase_channel(phase), &request_);
  if (is_error(s)) {
    return failf(s, "team creation failed in phase %s (%s): %s", phase_name(phase), step,
                 last_error().c_str());
  }
  COHORT_LOG_TRACE(INIT, "%s: phase %s (%s) posted, local status %s", info_.name.c_str(),
                   phase_name(phase), step, cohort_status_string(local));
  return COHORT_IN_PROGRESS;
}

Status Exchange::poll() {
  Status s = poll_notices();
  if (is_error(s)) return s;
  s = request_->test();
  if (s == COHORT_IN_PROGRESS) {
    return now_ns() < deadline_ns_ ? COHORT_IN_PROGRESS : timeout_failure();
  }
  if (is_error(s)) {
    return failf(s, "team creation failed in phase %s (%s): %s", phase_name(phase_), step_,
                 last_error().c_str());
  }
  const char *records = request_->result();
  if (s = poll_notices(); is_error(s)) return s;  // a rank that gave up after sending its part
  for (int r = 0; r < info_.size; ++r) {
    PhaseHeader header;
    std::memcpy(&header, records + r * record_len_, sizeof(header));
    if (header.magic != kRecordMagic || header.phase != static_cast<int32_t>(phase_)) {
      return failf(COHORT_ERR_INVALID_USAGE,
                   "team creation failed in phase %s: rank %d sent a record for another phase or "
                   "program (magic 0x%x, phase %d): are ranks creating different teams on one "
                   "communicator at once?",
                   phase_name(phase_), r, header.magic, header.phase);
    }
  }
  return agreed_failure(records);
}

// Every rank holds the same records, so every rank picks the same first failing rank.
Status Exchange::agreed_failure(const char *records) const {
  for (int r = 0; r < info_.size; ++r) {
    PhaseHeader header;
    std::memcpy(&header, records + r * record_len_, sizeof(header));
    if (header.status == COHORT_SUCCESS) continue;
    return cohort::agreed_failure("team creation", phase_, info_.describe(r),
                                  static_cast<Status>(header.status), header.detail);
  }
  return COHORT_SUCCESS;
}

Status Exchange::timeout_failure() {
  bool known = false;
  std::vector<int> absent = request_->absent(&known);
  const char *phase = phase_name(phase_);
  if (!known && !request_->absence_note().empty()) {
    return notify_gave_up(failf(COHORT_ERR_TIMEOUT,
                                "team creation timed out in phase %s (%s) after %.2f s: %s", phase,
                                step_, timeout_s_, request_->absence_note().c_str()));
  }
  if (!known) {
    return failf(COHORT_ERR_TIMEOUT,
                 "team creation timed out in phase %s (%s) after %.2f s: the OOB allgather did "
                 "not complete, and a caller-supplied OOB cannot tell which ranks are missing "
                 "(create the team from an MPI communicator to have them named)",
                 phase, step_, timeout_s_);
  }
  std::string who;
  constexpr size_t kDescribed = 8;
  for (size_t i = 0; i < absent.size() && i < kDescribed; ++i) {
    who += (i == 0 ? "" : "; ") + info_.describe(absent[i]);
  }
  if (absent.size() > kDescribed) who += "; all missing: " + format_rank_list(absent);
  MissingText text = missing_text(step_);
  // Tell the ranks still waiting in this exchange why it ends, rather than let each wait out
  // its own timeout or, having received every part, go on alone.
  return notify_gave_up(failf(COHORT_ERR_TIMEOUT,
                              "team creation timed out in phase %s after %.2f s: %zu of %d ranks "
                              "%s: %s. %s",
                              phase, timeout_s_, absent.size(), info_.size, text.what, who.c_str(),
                              text.why));
}

const char *Exchange::payload_of(int r) const {
  return request_->result() + r * record_len_ + sizeof(PhaseHeader);
}

Status Exchange::notify_gave_up(Status status) {
  if (!notices_ || oob_ == nullptr) return status;
  PhaseHeader notice = phase_header(phase_, status);
  oob_->notify_all(&notice, sizeof(notice), kNoticeChannel);
  return status;
}

Status Exchange::poll_notices() {
  if (!notices_) return COHORT_SUCCESS;
  PhaseHeader notice;
  int from = -1;
  if (!oob_->poll_notice(&notice, sizeof(notice), kNoticeChannel, &from)) return COHORT_SUCCESS;
  notice.detail[kDetailBytes - 1] = '\0';
  Status status = is_error(static_cast<Status>(notice.status)) ? static_cast<Status>(notice.status)
                                                               : COHORT_ERR_INTERNAL;
  return failf(status, "team creation failed in phase %s: %s gave up: %s", phase_name(phase_),
               info_.describe(from).c_str(), notice.detail);
}

}  // namespace cohort
