// Cohort's own threads (core/threads.h): named, so that top -H, ps -L, gdb and /proc tell them
// apart from the application's; the wire's lanes carry their number.
#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "core/threads.h"
#include "tl_ucx/worker.h"

namespace cohort {
namespace {

// The names of this process's threads, from /proc/self/task/*/comm.
std::multiset<std::string> thread_names() {
  std::multiset<std::string> names;
  for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  return names;
}

// Names a new thread `name` and reads its name back there; `named`: what naming returned.
std::string name_read_back(const char *name, bool *named) {
  std::string read;
  std::thread t([&] {
    *named = name_this_thread(name);
    char buffer[16] = {};
    pthread_getname_np(pthread_self(), buffer, sizeof buffer);
    read = buffer;
  });
  t.join();
  return read;
}

TEST(Threads, ANameIsSetAndCutToTheKernelsFifteenCharacters) {
  bool named = false;
  EXPECT_EQ(name_read_back("cohort-a-name-of-thirty-characters", &named), "cohort-a-name-o");
  EXPECT_TRUE(named);
  named = false;
  EXPECT_EQ(name_read_back("cohort-test", &named), "cohort-test");
  EXPECT_TRUE(named);
}

TEST(Threads, EachLaneOfTheWireIsNamedByItsNumber) {
  std::shared_ptr<tl_ucx::Worker> worker;
  ASSERT_EQ(tl_ucx::Worker::create(&worker, "", 3), COHORT_SUCCESS) << last_error();
  // A lane names itself when its thread starts: wait for that, at most 10 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::multiset<std::string> names;
  for (;;) {
    names = thread_names();
    if (names.count("cohort-lane-0") && names.count("cohort-lane-1") &&
        names.count("cohort-lane-2")) {
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "lane threads not named";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(names.count("cohort-lane-3"), 0u);  // three lanes, numbered from 0
  worker.reset();                               // the lanes' threads end with it
  EXPECT_EQ(thread_names().count("cohort-lane-2"), 0u);
}

}  // namespace
}  // namespace cohort
