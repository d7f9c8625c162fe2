// The MPI part of teams: creation from an MPI communicator (its check-in and private
// duplicate, mpi_entry.h), split over MPI, and the hooks the core reaches MPI through
// (mpi_hooks.h), filled when this part of the library loads.
#include "team/team_mpi.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/oob_mpi.h"
#include "team/checkin.h"
#include "team/lingering.h"
#include "team/mpi_entry.h"
#include "core/mpi_hooks.h"
#include "team/split_order.h"
#include "team/team.h"

namespace cohort {
namespace {

// Split's tags on the private communicator (creation phases use tags 0-15): its check-in
// (one tag per attempt, 100-163), and MPI_Comm_create_group's own messages, which must never
// meet a left-over check-in one.
constexpr int kSplitTagBase = 100;
constexpr int kCreateGroupTag = 100 + kCheckInTagWindow;

std::string library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  return std::string(version, static_cast<size_t>(len));
}

// Fills the hooks when the library loads (before any team exists).
struct RegisterHooks {
  RegisterHooks() {
    MpiHooks &h = mpi_hooks();
    h.usable = mpi_usable;
    h.progress_lingering = progress_lingering;
    h.split = [](TeamImpl &parent, int color, int key, const cohort_team_config_t *config,
                 std::shared_ptr<TeamImpl> *child) {
      return parent.split_mpi(color, key, config, child);
    };
    h.library_version = library_version;
  }
} g_register_hooks;

}  // namespace

Status post_mpi_team(MPI_Comm comm, bool owns_comm, const cohort_team_config_t *config,
                     std::shared_ptr<TeamImpl> *out) {
  int size = 0, rank = 0, world_rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  log_set_rank(world_rank);
  EntryFactory make_entry = [comm, owns_comm](double timeout_s, Status local,
                                              const std::string &detail) {
    return std::unique_ptr<CreationEntry>(
        new MpiEntry(comm, owns_comm, timeout_s, local, detail));
  };
  return TeamImpl::post_entry(make_entry, size, rank, config, out);
}

// Split agrees on membership through a check-in on the parent's private communicator (so
// a rank that never calls split is named, and no rank enters the collective child creation
// unless every rank confirmed), then builds the child communicator over the members only.
Status TeamImpl::split_mpi(int color, int key, const cohort_team_config_t *config,
                       std::shared_ptr<TeamImpl> *child) {
  std::unique_lock<std::mutex> lock(mutex_);
  Status s = ready_locked();
  if (is_error(s)) return s;
  const TeamConfig &team_config = parts_.config;
  auto *mpi = dynamic_cast<MpiOob *>(parts_.oob.get());
  if (mpi == nullptr) {
    return fail(COHORT_ERR_NOT_SUPPORTED,
                "split needs a team created from an MPI communicator; this one uses a "
                "caller-supplied OOB");
  }
  if (!mpi_usable()) return fail(COHORT_ERR_INVALID_USAGE, "split: MPI is already finalised");
  CheckIn::Options options;
  options.comm = mpi->comm();
  options.tag_base = kSplitTagBase;
  options.tags_ascend = true;
  options.timeout_s = team_config.init_timeout_s;
  std::string what = "split of team '" + team_config.name + "'";
  options.what = what.c_str();
  options.payload[0] = color;
  options.payload[1] = key;
  options.known = parts_.info.arrivals;
  if (color < 0 && color != COHORT_SPLIT_NOCOLOR) {
    options.local_status =
        failf(COHORT_ERR_INVALID_ARG, "color=%d: give a color >= 0 or COHORT_SPLIT_NOCOLOR", color);
    options.local_detail = last_error();
  }
  CheckIn checkin(options);
  Backoff backoff;
  while ((s = checkin.progress()) == COHORT_IN_PROGRESS) {
    lock.unlock();
    backoff.pause();
    lock.lock();
    if (stage_ == Stage::kAborted) {
      return fail(COHORT_ERR_ABORTED, "team '" + team_config.name + "' was aborted during split");
    }
  }
  if (is_error(s)) return s;
  std::vector<SplitEntry> entries(parts_.info.size);
  for (int r = 0; r < parts_.info.size; ++r) {
    entries[r] = {checkin.records()[r].payload[0], checkin.records()[r].payload[1]};
  }
  std::vector<int> members = split_members(entries, color);
  if (members.empty()) {
    *child = nullptr;
    return COHORT_SUCCESS;
  }
  MPI_Group parent_group, child_group;
  MPI_Comm child_comm = MPI_COMM_NULL;
  MPI_Comm_group(mpi->comm(), &parent_group);
  MPI_Group_incl(parent_group, static_cast<int>(members.size()), members.data(), &child_group);
  MPI_Comm parent_comm = mpi->comm();
  lock.unlock();  // collective over the members: an abort must not wait for it
  int rc = MPI_Comm_create_group(parent_comm, child_group, kCreateGroupTag, &child_comm);
  MPI_Group_free(&child_group);
  MPI_Group_free(&parent_group);
  if (rc != MPI_SUCCESS) {
    return failf(COHORT_ERR_MPI, "split of team '%s': MPI_Comm_create_group: %s",
                 team_config.name.c_str(), mpi_error_string(rc).c_str());
  }
  cohort_team_config_t inherited = public_config_;
  std::string child_name = team_config.name + "/" + std::to_string(color);
  inherited.name = child_name.c_str();
  std::shared_ptr<TeamImpl> created;
  post_mpi_team(child_comm, true, config != nullptr ? config : &inherited, &created);
  s = created->wait();
  if (is_error(s)) return s;
  *child = std::move(created);
  return COHORT_SUCCESS;
}

}  // namespace cohort
