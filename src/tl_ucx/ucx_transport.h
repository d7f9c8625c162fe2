// The transport between hosts: UCX tag messages over the process's worker (worker.h), a pair
// of byte channels (channel.h) per rank on another host, and a control tag per team that
// carries team-wide notices.
#pragma once

#include <memory>

#include "tl/transport.h"

namespace cohort::tl_ucx {

std::unique_ptr<tl::Transport> make_ucx_transport();

}  // namespace cohort::tl_ucx
