// Where Cohort's own threads run (the progress engine, the wire's lanes).
#pragma once

namespace cohort {

// With COHORT_PROGRESS_BIND=SPREAD (the default) the calling thread may run on any CPU the
// process's cgroup allows, not only the cores its rank is bound to: mpirun binds a rank to one
// core, where a helper thread would take turns with the application's (spinning in
// cudaStreamSynchronize, say) at the scheduler's pace, milliseconds.  INHERIT leaves it.
void spread_this_thread();

// Names the calling thread `name` (its first 15 characters: the kernel's limit) for top -H,
// ps -L, gdb and /proc/PID/task/TID/comm, so that Cohort's threads are told apart from the
// application's.  Returns whether the name was set.
bool name_this_thread(const char *name);

// The CPUs this machine has online (at least 1).
int online_cpus();

}  // namespace cohort
