#include "perf_job.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <thread>

namespace cohort::perf {
namespace {

// The CPUs this process may run on; all the machine's when the mask cannot be read.
cpu_set_t affinity() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) return cpus;
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned c = 0; c < all && c < CPU_SETSIZE; ++c) CPU_SET(c, &cpus);
  return cpus;
}

// One host's ranks and the cores they share, as the host's ranks see them.
struct HostShare {
  int ranks = 1;
  int cores = 1;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
};

HostShare host_share(MPI_Comm local) {
  HostShare share;
  MPI_Comm_size(local, &share.ranks);
  cpu_set_t cpus = affinity();
  MPI_Allreduce(MPI_IN_PLACE, &cpus, sizeof cpus, MPI_BYTE, MPI_BOR, local);
  share.cores = std::max(1, CPU_COUNT(&cpus));
  int length = 0;
  MPI_Get_processor_name(share.host, &length);
  return share;
}

}  // namespace

Job job_of(MPI_Comm comm) {
  Job job;
  MPI_Comm_rank(comm, &job.rank);
  MPI_Comm_size(comm, &job.ranks);
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, job.rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  HostShare share = host_share(local);
  MPI_Comm_free(&local);
  // Counted once per host, by its first rank.
  int counts[2] = {local_rank == 0, local_rank == 0 && share.ranks > share.cores};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT, MPI_SUM, comm);
  struct {
    double ranks_per_core;
    int rank;
  } mine = {static_cast<double>(share.ranks) / share.cores, job.rank}, busiest;
  MPI_Allreduce(&mine, &busiest, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  MPI_Bcast(&share, sizeof share, MPI_BYTE, busiest.rank, comm);
  job.load.hosts = counts[0];
  job.load.oversubscribed_hosts = counts[1];
  job.load.ranks = share.ranks;
  job.load.cores = share.cores;
  job.load.host = share.host;
  return job;
}

std::string first_error(MPI_Comm comm, const std::string &mine) {
  int rank = 0, first = 0;
  MPI_Comm_rank(comm, &rank);
  const int candidate = mine.empty() ? INT_MAX : rank;
  MPI_Allreduce(&candidate, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return "";
  int length = static_cast<int>(mine.size());
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string text = rank == first ? mine : std::string(length, ' ');
  MPI_Bcast(text.data(), length, MPI_CHAR, first, comm);
  return text;
}

std::string oversubscription_warning(const HostLoad &load) {
  if (!load.oversubscribed()) return "";
  std::string text = std::to_string(load.ranks) + " ranks share " + std::to_string(load.cores) +
                     (load.cores == 1 ? " core" : " cores") + " on host " + load.host;
  if (load.oversubscribed_hosts > 1) {
    text += " (the busiest of " + std::to_string(load.oversubscribed_hosts) + " such hosts)";
  }
  return text + ": timings and ratios are not meaningful";
}

}  // namespace cohort::perf
