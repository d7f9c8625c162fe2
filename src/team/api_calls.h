// How the C API's files run a collective call on a team handle (api.cc): the handle
// resolved, the call checked and run or posted, exceptions kept inside.
#pragma once

#include <functional>
#include <memory>

#include "cohort.h"
#include "team/coll_front.h"

namespace cohort {

class TeamImpl;

// A team creation through the C API: `post` posts it; a blocking one waits, and the handle
// is returned only for a team every rank agreed is ready.
Status create_team(const char *call, const std::function<Status(std::shared_ptr<TeamImpl> *)> &post,
                   bool blocking, cohort_team_t *out);

Status run_collective(const char *call, cohort_team_t handle, const CollCall &args);
Status enqueue_collective(const char *call, cohort_team_t handle, const CollCall &args,
                          void *stream);
// A request handle for test / wait / free in *out.
Status post_collective(const char *call, cohort_team_t handle, const CollCall &args,
                       cohort_request_t *out);

}  // namespace cohort
