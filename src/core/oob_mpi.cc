#include "core/oob_mpi.h"

#include <cstring>

#include "core/detached_sends.h"
#include "core/log.h"

namespace cohort {
namespace {

class MpiAllgatherRequest final : public OobRequest {
 public:
  MpiAllgatherRequest(MPI_Comm comm, int rank, int size, size_t len)
      : comm_(comm),
        rank_(rank),
        size_(size),
        len_(len),
        recv_(new char[len * size + 1]),
        recvs_(size, MPI_REQUEST_NULL),
        arrived_(size, 0) {}

  ~MpiAllgatherRequest() override { release(); }

  Status post(const void *data, int tag) {
    std::shared_ptr<char[]> send(new char[len_ > 0 ? len_ : 1]);
    std::memcpy(send.get(), data, len_);
    std::memcpy(recv_.get() + rank_ * len_, data, len_);
    arrived_[rank_] = 1;
    pending_ = size_ - 1;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      int rc = MPI_Irecv(recv_.get() + peer * len_, static_cast<int>(len_), MPI_BYTE, peer, tag,
                         comm_, &recvs_[peer]);
      if (rc != MPI_SUCCESS) {
        return failf(COHORT_ERR_MPI, "MPI_Irecv from rank %d: %s", peer,
                     mpi_error_string(rc).c_str());
      }
    }
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      int rc = send_detached(send, len_, peer, tag, comm_);
      if (rc != MPI_SUCCESS) {
        return failf(COHORT_ERR_MPI, "MPI_Isend to rank %d: %s", peer,
                     mpi_error_string(rc).c_str());
      }
    }
    return COHORT_SUCCESS;
  }

  // Complete once every block arrived: this rank's own sends need not be (see detached_sends.h).
  Status test() override {
    reap_detached_sends();
    if (pending_ == 0) return COHORT_SUCCESS;
    int count = 0;
    std::vector<int> indices(size_);
    int rc = MPI_Testsome(size_, recvs_.data(), &count, indices.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      return failf(COHORT_ERR_MPI, "MPI_Testsome: %s", mpi_error_string(rc).c_str());
    }
    for (int i = 0; count != MPI_UNDEFINED && i < count; ++i) {
      arrived_[indices[i]] = 1;
      --pending_;
    }
    return pending_ == 0 ? COHORT_SUCCESS : COHORT_IN_PROGRESS;
  }

  const char *result() const override { return recv_.get(); }

  std::vector<int> absent(bool *known) const override {
    *known = true;
    std::vector<int> out;
    for (int peer = 0; peer < size_; ++peer) {
      if (!arrived_[peer]) out.push_back(peer);
    }
    return out;
  }

 private:
  // Cancels receives that never matched.
  void release() {
    if (!mpi_usable()) return;
    for (MPI_Request &r : recvs_) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }

  MPI_Comm comm_;
  int rank_;
  int size_;
  size_t len_;
  std::unique_ptr<char[]> recv_;
  std::vector<MPI_Request> recvs_;
  std::vector<char> arrived_;
  int pending_ = 0;
};

}  // namespace

bool mpi_usable() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int mpi_tag_upper_bound() {
  void *value = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
  return flag ? *static_cast<int *>(value) : 32767;
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, len);
}

MpiOob::MpiOob(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_rank(comm_, &rank_);
}

MpiOob::~MpiOob() {
  if (comm_ != MPI_COMM_NULL && mpi_usable()) MPI_Comm_free(&comm_);
}

Status MpiOob::allgather(const void *data, size_t len, int channel,
                         std::unique_ptr<OobRequest> *request) {
  if (channel < 0 || channel > 0xffff) {
    return failf(COHORT_ERR_INTERNAL, "OOB channel %d out of range", channel);
  }
  int tag = channel;
  auto req = std::make_unique<MpiAllgatherRequest>(comm_, rank_, size_, len);
  Status s = req->post(data, tag);
  if (is_error(s)) return s;
  COHORT_LOG_TRACE(OOB, "allgather posted: %zu bytes, tag %d, %d ranks", len, tag, size_);
  *request = std::move(req);
  return COHORT_SUCCESS;
}

void MpiOob::notify_all(const void *data, size_t len, int channel) {
  if (!mpi_usable()) return;
  std::shared_ptr<char[]> copy(new char[len]);
  std::memcpy(copy.get(), data, len);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) send_detached(copy, len, peer, channel, comm_);
  }
}

bool MpiOob::poll_notice(void *data, size_t len, int channel, int *from) {
  int found = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, channel, comm_, &found, &status) != MPI_SUCCESS || !found) {
    return false;
  }
  std::memset(data, 0, len);
  MPI_Recv(data, static_cast<int>(len), MPI_BYTE, status.MPI_SOURCE, channel, comm_,
           MPI_STATUS_IGNORE);
  *from = status.MPI_SOURCE;
  return true;
}

}  // namespace cohort
