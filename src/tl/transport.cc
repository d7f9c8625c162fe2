#include "tl/transport.h"

#include <cstring>

#include "core/hash.h"

namespace cohort::tl {

uint64_t TeamView::gpu_of_uuid(const uint8_t uuid[16]) { return fnv1a(uuid, 16) | 1; }

int TeamView::local_size() const {
  int n = 0;
  for (int r = 0; r < size; ++r) n += same_host(r);
  return n;
}

std::vector<int> TeamView::local_ranks() const {
  std::vector<int> ranks(local_size());
  for (int r = 0; r < size; ++r) {
    if (same_host(r)) ranks[local_rank[r]] = r;
  }
  return ranks;
}

Notice Notice::make(int rank, Status status, const std::string &detail) {
  Notice notice;
  notice.rank = rank;
  notice.status = status;
  std::strncpy(notice.detail, detail.c_str(), sizeof(notice.detail) - 1);
  return notice;
}

std::string Notice::text() const { return std::string(detail, strnlen(detail, sizeof(detail))); }

}  // namespace cohort::tl
