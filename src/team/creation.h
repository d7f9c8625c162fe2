// Team creation: a table of phases (phase.h), each an exchange in which every rank reports its
// status and its part, so that every rank leaves creation with the same outcome.  One
// nonblocking step per progress() call; the team drives it (blocking or posted).
//
// A phase is a row of kPhaseTable: `prepare` computes this rank's part, of the same size on
// every rank even when it fails (its failure is this rank's status in the exchange); `finish`
// reads every rank's parts once all succeeded.  A
// device-setup phase is one more row.  A team made from an MPI communicator first goes through
// its MpiEntry (check-in on the caller's communicator, then its private duplicate); one made
// over a caller's OOB checks in with the first row's exchange.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "team/exchange.h"
#include "team/creation_entry.h"
#include "team/team_parts.h"
#include "topo/paths.h"
#include "topo/topo.h"

namespace cohort {

class Creation {
 public:
  // Through the entry `make_entry` makes (a team from MPI), or without one over parts.oob.
  // `config_status` is the outcome of resolving the config (its detail in last_error()).
  Creation(TeamParts &parts, Status config_status, const EntryFactory &make_entry);
  ~Creation();

  // COHORT_SUCCESS when every rank is ready, COHORT_IN_PROGRESS, or the failure every rank
  // agreed on.
  Status progress();
  // Steps taken so far (a waiter resets its back-off when this moves).
  uint64_t transitions() const { return transitions_; }
  // The caller walked away (abort, or destroy during creation): the others are told.
  void abandon(const std::string &why);

 private:
  struct PhaseSpec {
    Phase phase;
    Status (Creation::*prepare)(std::vector<char> *part);
    Status (Creation::*finish)();
  };
  static const PhaseSpec kPhaseTable[];

  Status step();
  Status enter();
  Status injected(Phase phase);
  void end_phase(Phase phase);
  const char *part_of(int rank) const { return exchange_.payload_of(rank); }

  // The phases (creation_phases.cc, creation_plan.cc, creation_connect.cc,
  // creation_device.cc).
  Status prepare_arrival(std::vector<char> *part);
  Status finish_arrival();
  Status prepare_peer_info(std::vector<char> *part);
  Status finish_peer_info();
  Status prepare_local_ranks(std::vector<char> *part);
  Status prepare_topology(std::vector<char> *part);
  Status prepare_graphs(std::vector<char> *part);
  Status finish_graphs();
  Status prepare_align(std::vector<char> *part);
  Status finish_align();
  Status prepare_connect(std::vector<char> *part);
  Status finish_connect();
  Status prepare_device_setup(std::vector<char> *part);
  Status finish_device_setup();
  Status prepare_ready(std::vector<char> *part);
  Status finish_ready();
  Status finish_nothing() { return COHORT_SUCCESS; }

  // Planning helpers (creation_plan.cc): the host leader's topology and graph.
  Status load_topology();
  Status host_graph(std::vector<int32_t> *words);
  Status search_or_load(const std::vector<int> &gpus, topo::NodeGraph *graph);
  Status build_plan();
  Status compare_plan_hashes();
  uint64_t settings_hash() const;
  Status check_settings_agree() const;

  TeamParts &parts_;
  Status config_status_;
  std::string config_error_;
  std::unique_ptr<CreationEntry> entry_;  // MPI teams, until their private communicator exists
  size_t phase_index_ = 0;           // into kPhaseTable
  uint64_t transitions_ = 0;
  Exchange exchange_;
  int64_t phase_start_ns_ = 0;
  int64_t phase_ns_[kNumPhases] = {};
  // Planning state, host leaders only (local rank 0): the host's topology and its paths.
  std::shared_ptr<const topo::Topology> topology_;
  std::unique_ptr<topo::Paths> paths_;
  bool topology_from_file_ = false;
  int local_max_ = 0;                       // ranks on the most populous host: sizes the summaries
  std::vector<int32_t> summaries_;          // graphs -> align: every host's packed summary
  // A connect or device-setup failure: this rank's status at ready.
  Status connect_status_ = COHORT_SUCCESS;
  std::string connect_error_;
};

}  // namespace cohort
