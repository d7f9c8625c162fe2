// Check-in: every rank of a communicator learns that every other rank arrived, agrees on
// each one's status, and confirms, before anything collective touches that communicator.
//
// It is point-to-point, so it can name the ranks that never came and leave nothing pending.
// Messages outlive a failed attempt (sends cannot be recalled), so attempts are numbered per
// communicator (an attribute counter, one per process), each attempt has its own tag, and
// every record carries its attempt: a record from an older attempt is dropped; an ABORT tells
// the others an attempt is dead; a rank that finds its attempt dead before anyone heard of it
// (it came late, or skipped a creation) joins the next attempt instead, so it meets the
// others at their next one.  Used for team creation on the caller's communicator
// and for split on the parent's private one.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "team/peer.h"
#include "team/phase.h"

namespace cohort {

// A place in this process's queue of check-ins on one communicator, in the order they were
// posted (the order MPI requires every rank to use for collectives on it).  The MPI_Comm_idup
// that follows a successful check-in may be posted only at the head of the queue: a later
// check-in that finishes first (an earlier one lingering after an abort, or a creation posted
// earlier but progressed later) would otherwise post its dup first on some ranks only, and
// the dups would pair up wrongly.  The holder keeps its place until its dup has completed:
// Open MPI cannot run two MPI_Comm_idup of one communicator at once (their context-id rounds
// interleave differently on different ranks and hang; open-mpi/ompi#2025).  Leaving the
// queue (destruction) lets the next one go.
class DupTicket {
 public:
  explicit DupTicket(MPI_Comm comm);
  ~DupTicket();
  DupTicket(const DupTicket &) = delete;
  DupTicket &operator=(const DupTicket &) = delete;
  bool first() const;  // no check-in posted earlier on this communicator is unresolved

 private:
  MPI_Comm comm_;
  uint64_t id_;
};

struct CheckInRecord {
  uint32_t magic;
  uint32_t kind;  // kArrive, kConfirm, kAbort
  uint64_t attempt;
  int32_t status;      // this rank's status on arrival (e.g. a bad config)
  int32_t payload[2];  // split: color, key
  int32_t reserved;
  ArrivalRecord who;
  char detail[kDetailBytes];
};

class CheckIn {
 public:
  struct Options {
    MPI_Comm comm = MPI_COMM_NULL;
    // Attempt a uses tag tag_base - (a % kTagWindow) (or + with tags_ascend): one tag per
    // attempt, so a rank still in attempt a never reads what a peer already sent for a + 1.
    int tag_base = 0;
    bool tags_ascend = false;
    double timeout_s = 300;
    const char *what = "team creation";  // names the operation in messages
    Status local_status = COHORT_SUCCESS;
    std::string local_detail;
    int32_t payload[2] = {0, 0};
    // Identities already known (a parent team's), to name ranks that never arrive.
    std::vector<ArrivalRecord> known;
  };

  explicit CheckIn(const Options &options);
  ~CheckIn();
  CheckIn(const CheckIn &) = delete;
  CheckIn &operator=(const CheckIn &) = delete;

  // COHORT_SUCCESS once every rank confirmed, COHORT_IN_PROGRESS, or the failure (its
  // message names the ranks, the step and the reason).
  Status progress();

  // True once this rank sent its CONFIRM: the others may already be past the check-in.
  bool confirmed() const { return step_ == Step::kConfirming || step_ == Step::kDone; }
  // Before confirming: tells every rank this attempt is dead (they fail at once, with
  // `reason`) and stops.
  void abandon(const std::string &reason);

  // Valid after success (and for ranks that arrived, after a failure).
  const std::vector<CheckInRecord> &records() const { return records_; }
  uint64_t attempt() const { return attempt_; }
  // Whether this check-in's MPI_Comm_idup may be posted now (see DupTicket).
  bool dup_turn() const { return ticket_ && ticket_->first(); }
  // The place in the queue, for whoever posts and completes the dup.
  std::unique_ptr<DupTicket> take_ticket() { return std::move(ticket_); }

 private:
  enum Kind : uint32_t { kArrive = 1, kConfirm = 2, kAbort = 3 };
  enum class Step { kArriving, kConfirming, kDone, kFailed };

  Status start();
  Status receive(int peer, bool *got);
  int tag() const;
  void send_all(Kind kind, Status status, const std::string &detail, bool all_heard = false);
  Status handle(int peer, const CheckInRecord &record);
  void join_attempt(uint64_t attempt);
  Status after_arrivals();
  Status poll_messages();
  Status timeout_failure();
  Status failed(Status status);
  std::string describe(int rank) const;

  Options options_;
  int rank_ = 0;
  int size_ = 0;
  uint64_t attempt_ = 0;
  Step step_ = Step::kArriving;
  bool started_ = false;
  int64_t deadline_ns_ = 0;
  std::vector<CheckInRecord> records_;  // the arrival of each rank, this attempt
  std::vector<char> arrived_, confirmed_;
  std::string abandoned_;  // why an earlier attempt this call joined ended
  ArrivalRecord me_;
  std::unique_ptr<DupTicket> ticket_;
};

constexpr int kCheckInTagWindow = 64;

// The attempt counter of (`comm`, `tag_base`) for this process: returns it and advances it.
uint64_t next_checkin_attempt(MPI_Comm comm, int tag_base);
// Moves that counter past `attempt` (after joining a newer attempt).
void advance_checkin_attempt(MPI_Comm comm, int tag_base, uint64_t attempt);

}  // namespace cohort
