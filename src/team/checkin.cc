#include "team/checkin.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "core/clock.h"
#include "core/detached_sends.h"
#include "core/log.h"
#include "core/oob_mpi.h"
#include "team/rank_list.h"

namespace cohort {
namespace {

constexpr uint32_t kCheckInMagic = 0xc0407c1eu;

using Counters = std::map<int, uint64_t>;  // tag -> next attempt

int delete_counters(MPI_Comm, int, void *value, void *) {
  delete static_cast<Counters *>(value);
  return MPI_SUCCESS;
}

int counters_keyval() {
  static int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_counters, &k, nullptr);
    return k;
  }();
  return keyval;
}

Counters &counters(MPI_Comm comm) {
  void *value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, counters_keyval(), &value, &found);
  if (found) return *static_cast<Counters *>(value);
  auto *fresh = new Counters();
  MPI_Comm_set_attr(comm, counters_keyval(), fresh);
  return *fresh;
}

struct DupQueues {
  std::mutex mutex;
  uint64_t next_id = 0;
  std::map<MPI_Comm, std::deque<uint64_t>> queues;  // per communicator, in posting order
};

DupQueues &dup_queues() {
  static DupQueues *queues = new DupQueues();  // outlives static destructors
  return *queues;
}

}  // namespace

DupTicket::DupTicket(MPI_Comm comm) : comm_(comm) {
  DupQueues &all = dup_queues();
  std::lock_guard<std::mutex> lock(all.mutex);
  id_ = all.next_id++;
  all.queues[comm_].push_back(id_);
}

DupTicket::~DupTicket() {
  DupQueues &all = dup_queues();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto it = all.queues.find(comm_);
  if (it == all.queues.end()) return;
  std::deque<uint64_t> &queue = it->second;
  queue.erase(std::find(queue.begin(), queue.end(), id_));
  if (queue.empty()) all.queues.erase(it);
}

bool DupTicket::first() const {
  DupQueues &all = dup_queues();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto it = all.queues.find(comm_);
  return it != all.queues.end() && it->second.front() == id_;
}

uint64_t next_checkin_attempt(MPI_Comm comm, int tag_base) { return counters(comm)[tag_base]++; }

void advance_checkin_attempt(MPI_Comm comm, int tag_base, uint64_t attempt) {
  uint64_t &next = counters(comm)[tag_base];
  if (next <= attempt) next = attempt + 1;
}

CheckIn::CheckIn(const Options &options)
    : options_(options), ticket_(std::make_unique<DupTicket>(options.comm)) {
  MPI_Comm_rank(options_.comm, &rank_);
  MPI_Comm_size(options_.comm, &size_);
  attempt_ = next_checkin_attempt(options_.comm, options_.tag_base);
  records_.resize(size_);
  me_ = local_arrival();
}

CheckIn::~CheckIn() = default;

Status CheckIn::progress() {
  if (!started_) {
    started_ = true;
    Status s = start();
    if (s != COHORT_IN_PROGRESS) return s;
  }
  if (step_ == Step::kDone) return COHORT_SUCCESS;
  Status s = poll_messages();
  if (s != COHORT_IN_PROGRESS) return s;
  return now_ns() < deadline_ns_ ? COHORT_IN_PROGRESS : timeout_failure();
}

Status CheckIn::start() {
  deadline_ns_ = deadline_after(options_.timeout_s);
  join_attempt(attempt_);
  return poll_messages();
}

int CheckIn::tag() const {
  int offset = static_cast<int>(attempt_ % kCheckInTagWindow);
  return options_.tags_ascend ? options_.tag_base + offset : options_.tag_base - offset;
}

// Messages are probed, not pre-posted: a posted receive left behind when the attempt ends
// could swallow a message of the attempt that reuses its tag, and cancelling it loses it.

Status CheckIn::receive(int peer, bool *got) {
  *got = false;
  int found = 0;
  MPI_Status status;
  MPI_Iprobe(peer, tag(), options_.comm, &found, &status);
  if (!found) return COHORT_IN_PROGRESS;
  *got = true;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  std::vector<char> buffer(std::max<size_t>(bytes, sizeof(CheckInRecord)), 0);
  MPI_Recv(buffer.data(), bytes, MPI_BYTE, peer, tag(), options_.comm, MPI_STATUS_IGNORE);
  CheckInRecord record;
  std::memcpy(&record, buffer.data(), sizeof(record));
  if (bytes != static_cast<int>(sizeof(CheckInRecord))) record.magic = 0;  // not ours
  return handle(peer, record);
}

void CheckIn::send_all(Kind kind, Status status, const std::string &detail, bool all_heard) {
  CheckInRecord record;
  std::memset(&record, 0, sizeof(record));
  record.magic = kCheckInMagic;
  record.kind = kind;
  record.attempt = attempt_;
  record.status = status;
  record.payload[0] = options_.payload[0];
  record.payload[1] = options_.payload[1];
  record.who = me_;
  std::strncpy(record.detail, detail.c_str(), kDetailBytes - 1);
  if (kind == kArrive) records_[rank_] = record;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    // An ABORT tells each peer whether it was part of the attempt it ends (see handle()).
    record.reserved = kind == kAbort ? (all_heard || arrived_[peer]) : 0;
    std::shared_ptr<char[]> buffer(new char[sizeof(record)]);
    std::memcpy(buffer.get(), &record, sizeof(record));
    send_detached(buffer, sizeof(record), peer, tag(), options_.comm);
  }
}

// (Re)starts this rank's part in `attempt`: everything heard for an older one is void.
void CheckIn::join_attempt(uint64_t attempt) {
  if (attempt != attempt_) {
    COHORT_LOG_INFO(INIT, "%s: joining check-in attempt %llu (was %llu)", options_.what,
                    static_cast<unsigned long long>(attempt),
                    static_cast<unsigned long long>(attempt_));
  }
  attempt_ = attempt;
  advance_checkin_attempt(options_.comm, options_.tag_base, attempt);
  arrived_.assign(size_, 0);
  confirmed_.assign(size_, 0);
  arrived_[rank_] = confirmed_[rank_] = 1;
  step_ = Step::kArriving;
  send_all(kArrive, options_.local_status, options_.local_detail);
}

Status CheckIn::handle(int peer, const CheckInRecord &record) {
  COHORT_LOG_TRACE(
      INIT, "%s: check-in record from rank %d: kind %u, attempt %llu (this rank: %llu)",
      options_.what, peer, record.kind, static_cast<unsigned long long>(record.attempt),
      static_cast<unsigned long long>(attempt_));
  if (record.magic != kCheckInMagic) {
    return failed(failf(COHORT_ERR_INVALID_USAGE,
                        "%s failed in phase check-in: rank %d sent a message on tag %d that is "
                        "not Cohort's; the application must not use tags %d-%d on this "
                        "communicator",
                        options_.what, peer, tag(), options_.tag_base - kCheckInTagWindow + 1,
                        options_.tag_base));
  }
  // Tags repeat every kCheckInTagWindow attempts: an older record on this tag is left over
  // from an attempt that ended long ago; a newer one means ranks drifted that far apart.
  if (record.attempt < attempt_) return COHORT_IN_PROGRESS;
  if (record.attempt > attempt_) {
    return failed(failf(COHORT_ERR_INVALID_USAGE,
                        "%s failed in phase check-in: %s is at attempt %llu on this "
                        "communicator, this rank at %llu: ranks called it different numbers of "
                        "times",
                        options_.what, describe(peer).c_str(),
                        static_cast<unsigned long long>(record.attempt),
                        static_cast<unsigned long long>(attempt_)));
  }
  switch (record.kind) {
    case kArrive:
      records_[peer] = record;
      arrived_[peer] = 1;
      break;
    case kConfirm: confirmed_[peer] = 1; break;
    case kAbort: {
      std::string reason(record.detail, strnlen(record.detail, kDetailBytes));
      std::string who = describe_rank(record.who.host_label, record.who.pid, peer);
      if (step_ == Step::kArriving && record.reserved == 0) {
        // It gave up before it heard of this rank: this rank came late.  Meet the others at
        // their next attempt rather than fail on one that ended before it arrived.
        abandoned_ =
            strprintf("attempt %llu ended before this rank arrived: %s gave up: %s",
                      static_cast<unsigned long long>(attempt_), who.c_str(), reason.c_str());
        join_attempt(attempt_ + 1);
        break;
      }
      return failed(failf(static_cast<Status>(record.status),
                          "%s failed in phase check-in: %s "
                          "gave up: %s",
                          options_.what, who.c_str(), reason.c_str()));
    }
    default:
      return failed(failf(COHORT_ERR_INVALID_USAGE,
                          "%s failed in phase check-in: rank %d sent an unknown record kind %u",
                          options_.what, peer, record.kind));
  }
  return COHORT_IN_PROGRESS;
}

// Every rank now holds the same arrival records, so every rank reaches the same verdict.
Status CheckIn::after_arrivals() {
  for (int r = 0; r < size_; ++r) {
    const CheckInRecord &record = records_[r];
    if (record.status == COHORT_SUCCESS) continue;
    return failed(agreed_failure(options_.what, Phase::kCheckIn, describe(r),
                                 static_cast<Status>(record.status), record.detail));
  }
  step_ = Step::kConfirming;
  send_all(kConfirm, COHORT_SUCCESS, "");
  return COHORT_IN_PROGRESS;
}

Status CheckIn::poll_messages() {
  reap_detached_sends();
  for (;;) {
    bool any = false;
    for (int peer = 0; peer < size_; ++peer) {
      bool got = false;
      while (peer != rank_) {  // drain what this peer sent for this attempt, in order
        Status s = receive(peer, &got);
        if (is_error(s)) return s;
        if (!got) break;
        any = true;
      }
    }
    if (any) continue;
    bool all_arrived = std::find(arrived_.begin(), arrived_.end(), 0) == arrived_.end();
    bool all_confirmed = std::find(confirmed_.begin(), confirmed_.end(), 0) == confirmed_.end();
    if (step_ == Step::kArriving && all_arrived) {
      Status s = after_arrivals();
      if (is_error(s)) return s;
      continue;
    }
    if (step_ == Step::kConfirming && all_confirmed) {
      step_ = Step::kDone;
      return COHORT_SUCCESS;
    }
    return COHORT_IN_PROGRESS;
  }
}

Status CheckIn::timeout_failure() {
  bool arriving = step_ == Step::kArriving;
  const std::vector<char> &heard = arriving ? arrived_ : confirmed_;
  std::vector<int> absent;
  std::string who;
  for (int peer = 0; peer < size_; ++peer) {
    if (heard[peer]) continue;
    absent.push_back(peer);
    if (absent.size() > 8) continue;
    who += (absent.size() == 1 ? "" : "; ") + describe(peer);
  }
  if (absent.size() > 8) who += "; all of them: " + format_rank_list(absent);
  std::string message = strprintf(
      "%s timed out in phase check-in after %.2f s: %zu of %d ranks %s: %s. %s", options_.what,
      options_.timeout_s, absent.size(), size_,
      arriving ? "never arrived" : "arrived but did not confirm", who.c_str(),
      arriving ? "Did every rank of the communicator make this call?"
               : "They gave up waiting before a late rank arrived: raise COHORT_INIT_TIMEOUT.");
  if (!abandoned_.empty()) message += " (Earlier, " + abandoned_ + ")";
  send_all(kAbort, COHORT_ERR_TIMEOUT, message);
  return failed(fail(COHORT_ERR_TIMEOUT, message));
}

void CheckIn::abandon(const std::string &reason) {
  if (step_ != Step::kArriving) return;
  started_ = true;  // an abort before the first poll still tells the others at once
  send_all(kAbort, COHORT_ERR_ABORTED, reason, true);
  step_ = Step::kFailed;
}

Status CheckIn::failed(Status status) {
  step_ = Step::kFailed;
  return status;
}

std::string CheckIn::describe(int rank) const {
  if (arrived_[rank]) {
    return describe_rank(records_[rank].who.host_label, records_[rank].who.pid, rank);
  }
  if (rank < static_cast<int>(options_.known.size())) {
    return describe_rank(options_.known[rank].host_label, options_.known[rank].pid, rank);
  }
  return "rank " + std::to_string(rank);
}

}  // namespace cohort
