// Header-only C++ layer over cohort.h: a move-only Team that destroys itself, and an Error
// exception that carries the status and cohort_last_error() of the failing call.
#ifndef COHORT_HPP
#define COHORT_HPP

#include <stdexcept>
#include <string>
#include <utility>

#include "cohort_mpi.h"

namespace cohort {

class Error : public std::runtime_error {
 public:
  Error(cohort_status_t status, const std::string &what)
      : std::runtime_error(std::string(cohort_status_string(status)) + ": " + what),
        status_(status) {}
  cohort_status_t status() const { return status_; }

 private:
  cohort_status_t status_;
};

inline void check(cohort_status_t status) {
  if (status != COHORT_SUCCESS && status != COHORT_IN_PROGRESS) {
    throw Error(status, cohort_last_error());
  }
}

class Team {
 public:
  Team() = default;
  explicit Team(MPI_Comm comm, const cohort_team_config_t *config = nullptr) {
    check(cohort_team_create_mpi(comm, config, &handle_));
  }
  // Takes ownership of a handle from the C API.
  static Team adopt(cohort_team_t handle) {
    Team t;
    t.handle_ = handle;
    return t;
  }
  ~Team() { reset(); }
  Team(Team &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Team &operator=(Team &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Team(const Team &) = delete;
  Team &operator=(const Team &) = delete;

  explicit operator bool() const { return handle_ != nullptr; }
  cohort_team_t get() const { return handle_; }
  void reset() {
    if (handle_ != nullptr) cohort_team_destroy(handle_);
    handle_ = nullptr;
  }

  // An empty Team for COHORT_SPLIT_NOCOLOR.
  Team split(int color, int key, const cohort_team_config_t *config = nullptr) const {
    cohort_team_t child = nullptr;
    check(cohort_team_split(handle_, color, key, config, &child));
    return adopt(child);
  }
  void abort() { check(cohort_team_abort(handle_)); }

  int size() const { return get_int(cohort_team_size); }
  int rank() const { return get_int(cohort_team_rank); }
  int cuda_device() const { return get_int(cohort_team_cuda_device); }
  int node_count() const { return get_int(cohort_team_node_count); }
  int node_index() const { return get_int(cohort_team_node_index); }
  int local_rank() const { return get_int(cohort_team_local_rank); }
  int local_size() const { return get_int(cohort_team_local_size); }
  cohort_peer_info_t peer(int rank) const {
    cohort_peer_info_t info;
    check(cohort_team_peer_info(handle_, rank, &info));
    return info;
  }
  cohort_init_report_t init_report() const {
    cohort_init_report_t report;
    check(cohort_team_init_report(handle_, &report));
    return report;
  }

 private:
  int get_int(cohort_status_t (*query)(cohort_team_t, int *)) const {
    int value = 0;
    check(query(handle_, &value));
    return value;
  }
  cohort_team_t handle_ = nullptr;
};

}  // namespace cohort

#endif  // COHORT_HPP
