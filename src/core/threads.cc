#include "core/threads.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "core/params.h"

namespace cohort {

void spread_this_thread() {
  int bind = 0;
  if (is_error(param_enum("PROGRESS_BIND", &bind)) || bind != 0) return;
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &all);
  // The kernel keeps the CPUs the cgroup allows; an error leaves the inherited binding.
  pthread_setaffinity_np(pthread_self(), sizeof all, &all);
}

bool name_this_thread(const char *name) {
  char shortened[16] = {};
  for (size_t i = 0; i + 1 < sizeof shortened && name[i] != '\0'; ++i) shortened[i] = name[i];
  return pthread_setname_np(pthread_self(), shortened) == 0;
}

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace cohort
