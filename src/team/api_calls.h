// How the C API's files run a collective call on a team handle (api.cc): the handle
// resolved, the call checked and run or posted, exceptions kept inside.
#pragma once

#include "cohort.h"
#include "team/coll_front.h"

namespace cohort {

Status run_collective(const char *call, cohort_team_t handle, const CollCall &args);
Status enqueue_collective(const char *call, cohort_team_t handle, const CollCall &args,
                          void *stream);
// A request handle for test / wait / free in *out.
Status post_collective(const char *call, cohort_team_t handle, const CollCall &args,
                       cohort_request_t *out);

}  // namespace cohort
