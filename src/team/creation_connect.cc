// Team creation, connect phase: the transports (team/transport_table.h; the team names none) post their
// parts of this rank's record, and after the exchange open their channels from every rank's.
// The record also carries a hash of the settings that decide what goes on the wire, which
// every rank must share.  A failure after the exchange is this rank's status in the ready
// phase, so every rank still ends alike.
#include <cstring>

#include "core/hash.h"
#include "team/creation.h"

namespace cohort {

uint64_t Creation::settings_hash() const {
  return fnv1a(parts_.colls.settings() + " " + parts_.transports.settings());
}

// Ranks that choose algorithms or message forms differently would wait on each other until
// the collective timeout: settings that differ are refused at creation, naming a rank.
Status Creation::check_settings_agree() const {
  const uint64_t mine = settings_hash();
  for (int r = 0; r < parts_.info.size; ++r) {
    uint64_t theirs = 0;
    std::memcpy(&theirs, part_of(r), sizeof(theirs));
    if (theirs == mine) continue;
    return failf(COHORT_ERR_INVALID_USAGE,
                 "a setting that decides what goes on the wire differs between ranks: %s has other "
                 "values than rank %d (%s %s); set them alike on every rank",
                 parts_.info.describe(r).c_str(), parts_.info.rank, parts_.colls.settings().c_str(),
                 parts_.transports.settings().c_str());
  }
  return COHORT_SUCCESS;
}

Status Creation::prepare_connect(std::vector<char> *part) {
  parts_.transports.create(parts_.info.view());
  part->assign(sizeof(uint64_t) + parts_.transports.record_bytes(), 0);
  Status s = parts_.colls.configure();
  if (!is_error(s)) s = parts_.transports.post(part->data() + sizeof(uint64_t));
  const uint64_t hash = settings_hash();  // the transports read their settings in post()
  std::memcpy(part->data(), &hash, sizeof(hash));
  return s;
}

Status Creation::finish_connect() {
  connect_status_ = check_settings_agree();
  if (!is_error(connect_status_)) {
    connect_status_ = parts_.transports.connect(part_of(0), exchange_.stride(), sizeof(uint64_t));
  }
  if (is_error(connect_status_)) connect_error_ = last_error();
  return COHORT_SUCCESS;
}

}  // namespace cohort
