// The transport between the ranks of one host: shared-memory mailboxes (host_channels.h),
// single copy for large messages where every rank of the host can read its peers' memory,
// and the segment's notice slot for team-wide notices.
#pragma once

#include <memory>

#include "tl/transport.h"

namespace cohort::tl_host {

std::unique_ptr<tl::Transport> make_shm_transport();

}  // namespace cohort::tl_host
