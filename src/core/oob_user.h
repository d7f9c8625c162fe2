// OOB over a caller-supplied cohort_oob_t (allgather / test / free, as UCC's ucc_oob_coll).
#pragma once

#include "core/oob.h"

namespace cohort {

class UserOob final : public Oob {
 public:
  explicit UserOob(const cohort_oob_t &oob) : oob_(oob) {}
  int size() const override { return static_cast<int>(oob_.size); }
  int rank() const override { return static_cast<int>(oob_.rank); }
  Status allgather(const void *data, size_t len, int channel,
                   std::unique_ptr<OobRequest> *request) override;

 private:
  cohort_oob_t oob_;
};

// Checks the fields of a caller's cohort_oob_t; the error names the bad field.
Status validate_user_oob(const cohort_oob_t *oob);

}  // namespace cohort
