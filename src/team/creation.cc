// The creation driver: the MPI entry, then the phase table, one exchange per phase; and the
// phases with little work of their own (check-in over a caller's OOB, peer-info, local-ranks,
// ready).
#include "team/creation.h"

#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "team/report.h"

namespace cohort {

const Creation::PhaseSpec Creation::kPhaseTable[] = {
    {Phase::kCheckIn, &Creation::prepare_arrival, &Creation::finish_arrival},
    {Phase::kPeerInfo, &Creation::prepare_peer_info, &Creation::finish_peer_info},
    {Phase::kLocalRanks, &Creation::prepare_local_ranks, &Creation::finish_nothing},
    {Phase::kTopology, &Creation::prepare_topology, &Creation::finish_nothing},
    {Phase::kGraphs, &Creation::prepare_graphs, &Creation::finish_graphs},
    {Phase::kAlign, &Creation::prepare_align, &Creation::finish_align},
    {Phase::kConnect, &Creation::prepare_connect, &Creation::finish_connect},
    {Phase::kDeviceSetup, &Creation::prepare_device_setup, &Creation::finish_device_setup},
    {Phase::kReady, &Creation::prepare_ready, &Creation::finish_ready},
};

Creation::Creation(TeamParts &parts, Status config_status, const EntryFactory &make_entry)
    : parts_(parts),
      config_status_(config_status),
      exchange_(parts.info, parts.config.init_timeout_s) {
  if (is_error(config_status)) config_error_ = last_error();
  static_assert(std::size(kPhaseTable) == kNumPhases, "a row for every phase");
  phase_start_ns_ = now_ns();
  if (!make_entry) return;
  // A rank whose config is bad still checks in, carrying its error, so all fail alike.
  Status local = config_status_;
  std::string detail = config_error_;
  if (!is_error(local) && is_error(local = injected(Phase::kCheckIn))) detail = last_error();
  entry_ = make_entry(parts.config.init_timeout_s, local, detail);
}

Creation::~Creation() = default;

// Steps while phases end (the next one is posted at once); the MPI entry ends with the first.
Status Creation::progress() {
  for (;;) {
    const size_t before = phase_index_;
    Status s = step();
    if (phase_index_ == before) return s;
    ++transitions_;
    if (s != COHORT_IN_PROGRESS) return s;
  }
}

// One step: the MPI entry, or the current phase's exchange (posted, or polled and finished).
Status Creation::step() {
  if (entry_) return enter();
  if (phase_index_ == std::size(kPhaseTable)) return COHORT_SUCCESS;
  const PhaseSpec &spec = kPhaseTable[phase_index_];
  // An MPI team's exchanges start after its check-in, on its private communicator; the other
  // OOBs are the team's own from the first row: notices may go on every one.
  const bool notices = true;
  if (!exchange_.active()) {
    // Every rank's part of a phase has one size, also where this rank's work failed.
    std::vector<char> part;
    Status local = (this->*spec.prepare)(&part);
    if (Status inject = injected(spec.phase); is_error(inject)) local = inject;
    return exchange_.post(*parts_.oob, spec.phase, phase_name(spec.phase), local, part.data(),
                          part.size(), notices);
  }
  Status s = exchange_.poll();
  if (s != COHORT_SUCCESS) return s;
  s = (this->*spec.finish)();
  exchange_.finish();
  if (is_error(s)) return s;
  end_phase(spec.phase);
  ++phase_index_;
  return phase_index_ == std::size(kPhaseTable) ? COHORT_SUCCESS : COHORT_IN_PROGRESS;
}

// The check-in on the caller's communicator and its duplicate; the first phase is then done.
Status Creation::enter() {
  Status s = entry_->progress();
  if (s != COHORT_SUCCESS) return s;
  parts_.info.arrivals = entry_->arrivals();
  parts_.oob = entry_->take_oob();
  entry_.reset();
  end_phase(Phase::kCheckIn);
  phase_index_ = 1;
  return COHORT_IN_PROGRESS;
}

void Creation::abandon(const std::string &why) {
  if (entry_) {
    entry_->abandon(why);
    return;
  }
  fail(COHORT_ERR_ABORTED, why);
  exchange_.notify_gave_up(COHORT_ERR_ABORTED);  // from peer-info on: the others fail at once
}

// COHORT_INJECT_FAILURE (testing): this rank fails, or stalls past the timeout, in `phase`.
Status Creation::injected(Phase phase) {
  const InjectedFailure &inject = parts_.config.inject;
  const TeamConfig &config = parts_.config;
  if (!inject.active || inject.phase != phase || inject.rank != parts_.info.rank) {
    return COHORT_SUCCESS;
  }
  if (inject.skew) return COHORT_SUCCESS;  // prepare_align alters the hash it reports
  if (inject.stall) {
    double stall_s = config.init_timeout_s * 1.2 + 0.3;
    COHORT_LOG_WARN(INIT, "%s: injected stall of %.2f s in phase %s", config.name.c_str(), stall_s,
                    phase_name(phase));
    usleep(static_cast<useconds_t>(stall_s * 1e6));
    return COHORT_SUCCESS;
  }
  return failf(COHORT_ERR_SYSTEM, "injected failure (COHORT_INJECT_FAILURE=%s:%d)",
               phase_name(phase), parts_.info.rank);
}

void Creation::end_phase(Phase phase) {
  int64_t now = now_ns();
  phase_ns_[static_cast<int>(phase)] = now - phase_start_ns_;
  phase_start_ns_ = now;
  COHORT_LOG_TRACE(INIT, "%s: phase %s done in %.3f ms", parts_.info.name.c_str(),
                   phase_name(phase), phase_ns_[static_cast<int>(phase)] / 1e6);
}

// A caller's OOB is private to Cohort already: one allgather checks everyone in.
Status Creation::prepare_arrival(std::vector<char> *part) {
  ArrivalRecord arrival = local_arrival();
  part->assign(reinterpret_cast<const char *>(&arrival),
               reinterpret_cast<const char *>(&arrival) + sizeof(arrival));
  return is_error(config_status_) ? fail(config_status_, config_error_) : COHORT_SUCCESS;
}

Status Creation::finish_arrival() {
  TeamInfo &info = parts_.info;
  info.arrivals.resize(info.size);
  for (int r = 0; r < info.size; ++r) {
    std::memcpy(&info.arrivals[r], part_of(r), sizeof(ArrivalRecord));
  }
  return COHORT_SUCCESS;
}

Status Creation::prepare_peer_info(std::vector<char> *part) {
  part->assign(sizeof(PeerRecord), 0);
  return gather_local_peer(parts_.config.cuda_device, reinterpret_cast<PeerRecord *>(part->data()));
}

Status Creation::finish_peer_info() {
  TeamInfo &info = parts_.info;
  info.peers.resize(info.size);
  for (int r = 0; r < info.size; ++r) std::memcpy(&info.peers[r], part_of(r), sizeof(PeerRecord));
  return COHORT_SUCCESS;
}

// Node layout, and the duplicate-GPU check (the status only is exchanged).
Status Creation::prepare_local_ranks(std::vector<char> *) {
  TeamInfo &info = parts_.info;
  std::vector<uint64_t> host_ids(info.size);
  for (int r = 0; r < info.size; ++r) host_ids[r] = info.peers[r].host_id;
  info.layout = compute_node_layout(host_ids);
  std::vector<std::vector<int>> shared = find_shared_gpus(info.peers);
  if (shared.empty()) return COHORT_SUCCESS;
  if (!parts_.config.allow_shared_gpu) {
    return fail(COHORT_ERR_INVALID_USAGE,
                "duplicate GPU: " + describe_shared_gpus(info.peers, shared));
  }
  COHORT_LOG_INFO(INIT, "%s: GPUs shared as allowed: %s", info.name.c_str(),
                  describe_shared_gpus(info.peers, shared).c_str());
  return COHORT_SUCCESS;
}

// The phase timings, then each transport's ready word; this rank's connect failure, if any.
Status Creation::prepare_ready(std::vector<char> *part) {
  std::vector<uint64_t> words = parts_.transports.ready_words();
  part->resize(sizeof(int64_t) * kNumReportPhases + sizeof(uint64_t) * words.size());
  std::memcpy(part->data(), phase_ns_, sizeof(int64_t) * kNumReportPhases);
  std::memcpy(part->data() + sizeof(int64_t) * kNumReportPhases, words.data(),
              sizeof(uint64_t) * words.size());
  return is_error(connect_status_) ? fail(connect_status_, connect_error_) : COHORT_SUCCESS;
}

Status Creation::finish_ready() {
  TeamInfo &info = parts_.info;
  const size_t transports = parts_.transports.size();
  std::vector<std::vector<int64_t>> timings(info.size, std::vector<int64_t>(kNumReportPhases));
  std::vector<std::vector<uint64_t>> words(info.size, std::vector<uint64_t>(transports));
  for (int r = 0; r < info.size; ++r) {
    std::memcpy(timings[r].data(), part_of(r), sizeof(int64_t) * kNumReportPhases);
    std::memcpy(words[r].data(), part_of(r) + sizeof(int64_t) * kNumReportPhases,
                sizeof(uint64_t) * transports);
  }
  parts_.transports.ready(words);
  const char *names[kNumReportPhases];
  for (int p = 0; p < kNumReportPhases; ++p) names[p] = phase_name(static_cast<Phase>(p));
  info.report = build_init_report(timings, names, kNumReportPhases);
  COHORT_LOG_INFO(INIT, "%s: ready: rank %d of %d, node %d of %d, local rank %d of %d, GPU %s",
                  info.name.c_str(), info.rank, info.size, info.layout.node_of_rank[info.rank],
                  info.layout.node_count, info.layout.local_rank[info.rank],
                  info.layout.local_size[info.rank],
                  info.peers[info.rank].cuda_device < 0 ? "none" : info.peers[info.rank].bus_id);
  if (info.rank != 0) return COHORT_SUCCESS;
  const topo::Plan &plan = info.plan;
  COHORT_LOG_INFO(GRAPH,
                  "%s: plan: %d channels x %.1f GB/s, %s within hosts, %s to NICs, %d hosts, "
                  "hash %016llx",
                  info.name.c_str(), plan.channels, plan.bw, topo::path_type_name(plan.intra_type),
                  topo::path_type_name(plan.net_type), plan.nodes,
                  static_cast<unsigned long long>(plan.hash));
  std::string text = format_init_report(info.report, info.size);
  text.pop_back();  // the logger ends the line
  COHORT_LOG_INFO(INIT, "%s: %s", info.name.c_str(), text.c_str());
  return COHORT_SUCCESS;
}

}  // namespace cohort
