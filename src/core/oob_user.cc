#include "core/oob_user.h"

#include <cstring>

namespace cohort {
namespace {

class UserAllgatherRequest final : public OobRequest {
 public:
  UserAllgatherRequest(const cohort_oob_t &oob, size_t len)
      : oob_(oob), send_(new char[len + 1]), recv_(new char[len * oob.size + 1]) {}

  ~UserAllgatherRequest() override {
    if (request_ != nullptr) oob_.req_free(request_);
    // A request freed before completion may still be written by the caller's OOB.
    if (done_ || request_ == nullptr) {
      delete[] send_;
      delete[] recv_;
    }
  }

  Status post(const void *data, size_t len) {
    std::memcpy(send_, data, len);
    Status s = oob_.allgather(send_, recv_, len, oob_.coll_info, &request_);
    if (s != COHORT_SUCCESS) {
      request_ = nullptr;
      return failf(is_error(s) ? s : COHORT_ERR_INVALID_USAGE, "OOB allgather returned %s",
                   cohort_status_string(s));
    }
    return COHORT_SUCCESS;
  }

  Status test() override {
    if (done_) return COHORT_SUCCESS;
    Status s = oob_.req_test(request_);
    if (s == COHORT_SUCCESS) done_ = true;
    if (s == COHORT_SUCCESS || s == COHORT_IN_PROGRESS) return s;
    return failf(is_error(s) ? s : COHORT_ERR_INVALID_USAGE,
                 "OOB req_test returned %s (%d); expected COHORT_SUCCESS or COHORT_IN_PROGRESS",
                 cohort_status_string(s), static_cast<int>(s));
  }

  const char *result() const override { return recv_; }

  std::vector<int> absent(bool *known) const override {
    *known = false;
    return {};
  }

 private:
  cohort_oob_t oob_;
  char *send_;
  char *recv_;
  void *request_ = nullptr;
  bool done_ = false;
};

}  // namespace

Status UserOob::allgather(const void *data, size_t len, int /*channel*/,
                          std::unique_ptr<OobRequest> *request) {
  auto req = std::make_unique<UserAllgatherRequest>(oob_, len);
  Status s = req->post(data, len);
  if (is_error(s)) return s;
  *request = std::move(req);
  return COHORT_SUCCESS;
}

Status validate_user_oob(const cohort_oob_t *oob) {
  if (oob == nullptr) return fail(COHORT_ERR_INVALID_ARG, "oob is NULL");
  if (oob->allgather == nullptr) return fail(COHORT_ERR_INVALID_ARG, "oob->allgather is NULL");
  if (oob->req_test == nullptr) return fail(COHORT_ERR_INVALID_ARG, "oob->req_test is NULL");
  if (oob->req_free == nullptr) return fail(COHORT_ERR_INVALID_ARG, "oob->req_free is NULL");
  if (oob->size == 0) return fail(COHORT_ERR_INVALID_ARG, "oob->size is 0");
  if (oob->size > (1u << 24)) {
    return failf(COHORT_ERR_INVALID_ARG, "oob->size %u is beyond the %u ranks a team may have",
                 oob->size, 1u << 24);
  }
  if (oob->rank >= oob->size) {
    return failf(COHORT_ERR_INVALID_ARG, "oob->rank %u is not below oob->size %u", oob->rank,
                 oob->size);
  }
  return COHORT_SUCCESS;
}

}  // namespace cohort
