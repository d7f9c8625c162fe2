// The OS threads that run the blocks of cooperative launches (cooperative.h), kept between
// launches: a new thread per block per launch costs more than many a block's work (under
// ASan most of all, which clears the shadow of every new thread's stack).
#pragma once

#include <functional>

namespace cohort_emul {

// Runs task() on a thread of its own, at once: an idle kept thread or a new one (blocks wait
// for each other, so a task never waits for a free thread).  Returns without waiting for it.
void run_on_worker(std::function<void()> task);

}  // namespace cohort_emul
