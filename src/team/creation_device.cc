// Team creation, device-setup phase: the device transport (team/transport_table.h; none in a build
// without CUDA) allocates this rank's GPU window and exports it, and after the exchange maps
// the other local ranks'.  A team without a GPU on every rank of a host takes part with an
// empty record and runs no collective on device memory (the transport says why when asked).
// A failure after the exchange is this rank's status in the ready phase, as for connect.
#include "team/creation.h"
#include "team/transport_table.h"

namespace cohort {

Status Creation::prepare_device_setup(std::vector<char> *part) {
  parts_.device = make_device_transport();
  if (!parts_.device) return COHORT_SUCCESS;
  const tl::TeamView view = parts_.info.view();
  part->assign(parts_.device->record_bytes(view), 0);
  return guarded("device setup", [&] { return parts_.device->post(view, part->data()); });
}

Status Creation::finish_device_setup() {
  if (!parts_.device || is_error(connect_status_)) return COHORT_SUCCESS;
  const tl::TeamView view = parts_.info.view();
  const tl::RecordTable records{part_of(0), exchange_.stride(), 0};
  connect_status_ = guarded("device setup", [&] { return parts_.device->connect(view, records); });
  if (is_error(connect_status_)) connect_error_ = last_error();
  return COHORT_SUCCESS;
}

}  // namespace cohort
