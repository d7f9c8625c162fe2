// Unit tests for shared-memory segments and mailboxes (src/tl_host/shm_segment.*, mailbox.*).
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "tl_host/mailbox.h"
#include "tl_host/shm_segment.h"

namespace cohort::tl_host {
namespace {

using coll::kChannelAlign;
using coll::RecvChannel;
using coll::SendChannel;

// A host id of this test process alone: stale cleanup then sees only the files this process
// made, even while another build's tests run on the same machine.  The "7e57" prefix holds a
// letter, which the upper-case look-alike below relies on.
uint64_t test_host_id() {
  static const uint64_t id = 0x7e57000000000000ull ^ (static_cast<uint64_t>(getpid()) << 20) ^
                             (static_cast<uint64_t>(now_ns()) & 0xfffff);
  return id;
}

std::string fresh_name() {
  static uint64_t sequence = 0;
  return segment_name(test_host_id(), getpid(), sequence++);
}

bool shm_file_exists(const std::string &name) {
  return access(("/dev/shm" + name).c_str(), F_OK) == 0;
}

int open_fd_count() {
  DIR *dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
}

// The pid of a child that has exited and been reaped: no process has it until pids wrap.
int dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// /dev/shm files made with plain shm_open (as another job would leave them), unlinked at the
// end of the test whatever happened to them.
class RawFiles {
 public:
  ~RawFiles() {
    for (const std::string &name : names_) shm_unlink(name.c_str());
  }
  bool make(const std::string &name) {
    names_.push_back(name);
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return false;
    close(fd);
    return true;
  }

 private:
  std::vector<std::string> names_;
};

// ---- ShmSegment ----------------------------------------------------------------------------

TEST(ShmSegment, CreateAttachShareBytesAndUnlinkKeepsTheMappings) {
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> creator, peer;
  ASSERT_EQ(ShmSegment::create(name, 4096, &creator), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(ShmSegment::attach(name, 4096, &peer), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(creator->size(), 4096u);
  EXPECT_EQ(peer->name(), name);
  EXPECT_TRUE(shm_file_exists(name));

  auto *a = static_cast<unsigned char *>(creator->data());
  auto *b = static_cast<unsigned char *>(peer->data());
  EXPECT_EQ(a[0], 0) << "a new segment is zeroed";
  a[0] = 0x5a;
  b[4095] = 0xa5;
  EXPECT_EQ(b[0], 0x5a);
  EXPECT_EQ(a[4095], 0xa5);

  creator->unlink();
  EXPECT_FALSE(shm_file_exists(name));
  creator->unlink();  // idempotent
  peer->unlink();     // the name is already gone: not an error either
  a[1] = 7;
  EXPECT_EQ(b[1], 7) << "the mappings outlive the name";
}

TEST(ShmSegment, AttachAfterUnlinkFailsNamingTheSegment) {
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> creator, peer;
  ASSERT_EQ(ShmSegment::create(name, 4096, &creator), COHORT_SUCCESS) << last_error();
  creator->unlink();
  EXPECT_EQ(ShmSegment::attach(name, 4096, &peer), COHORT_ERR_SYSTEM);
  EXPECT_EQ(peer, nullptr);
  EXPECT_NE(last_error().find(name), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("does not exist"), std::string::npos) << last_error();
}

TEST(ShmSegment, AttachWithWrongSizeFailsNamingBothSizes) {
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> creator, peer;
  ASSERT_EQ(ShmSegment::create(name, 8192, &creator), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(ShmSegment::attach(name, 4096, &peer), COHORT_ERR_INVALID_USAGE);
  EXPECT_EQ(peer, nullptr);
  const std::string &error = last_error();
  EXPECT_NE(error.find(name), std::string::npos) << error;
  EXPECT_NE(error.find("8192"), std::string::npos) << error;
  EXPECT_NE(error.find("4096"), std::string::npos) << error;
}

TEST(ShmSegment, CreateOfAnExistingNameFailsAndLeavesItAlone) {
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> first, second;
  ASSERT_EQ(ShmSegment::create(name, 4096, &first), COHORT_SUCCESS) << last_error();
  static_cast<char *>(first->data())[0] = 42;
  EXPECT_EQ(ShmSegment::create(name, 4096, &second), COHORT_ERR_SYSTEM);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(last_error().find(name), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("already exists"), std::string::npos) << last_error();
  ASSERT_EQ(ShmSegment::attach(name, 4096, &second), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(static_cast<char *>(second->data())[0], 42) << "the failed create kept its hands off";
}

TEST(ShmSegment, OnlyTheCreatorUnlinksWhenDestroyed) {
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> creator, peer;
  ASSERT_EQ(ShmSegment::create(name, 4096, &creator), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(ShmSegment::attach(name, 4096, &peer), COHORT_SUCCESS) << last_error();
  peer.reset();
  EXPECT_TRUE(shm_file_exists(name));
  creator.reset();  // e.g. a connect phase that failed before everyone attached
  EXPECT_FALSE(shm_file_exists(name));
}

TEST(ShmSegment, KeepsNoFileDescriptorOpen) {
  int before = open_fd_count();
  ASSERT_GT(before, 0);
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> creator, peer, wrong;
  ASSERT_EQ(ShmSegment::create(name, 4096, &creator), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(ShmSegment::attach(name, 4096, &peer), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(open_fd_count(), before);
  EXPECT_NE(ShmSegment::attach(name, 1, &wrong), COHORT_SUCCESS);  // failure paths close too
  EXPECT_NE(ShmSegment::create(name, 4096, &wrong), COHORT_SUCCESS);
  EXPECT_EQ(open_fd_count(), before);
  creator.reset();
  peer.reset();
  EXPECT_EQ(open_fd_count(), before);
}

TEST(ShmSegment, RejectsMalformedNamesAndEmptySegments) {
  std::unique_ptr<ShmSegment> segment;
  for (const char *name : {"", "/", "cohort-no-slash", "/cohort/nested"}) {
    EXPECT_EQ(ShmSegment::create(name, 4096, &segment), COHORT_ERR_INVALID_ARG) << name;
    EXPECT_EQ(ShmSegment::attach(name, 4096, &segment), COHORT_ERR_INVALID_ARG) << name;
  }
  EXPECT_EQ(ShmSegment::create(fresh_name(), 0, &segment), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(segment, nullptr);
}

TEST(ShmSegment, TooLargeForDevShmNamesSizeAndFreeSpace) {
  struct statvfs fs;
  ASSERT_EQ(statvfs("/dev/shm", &fs), 0);
  // An unlimited tmpfs would try to allocate it all rather than refuse at once.
  if (fs.f_blocks == 0) GTEST_SKIP() << "/dev/shm has no size limit";
  size_t bytes = static_cast<size_t>(fs.f_blocks) * fs.f_frsize + (size_t{1} << 30);
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> segment;
  EXPECT_EQ(ShmSegment::create(name, bytes, &segment), COHORT_ERR_NO_MEMORY) << last_error();
  const std::string &error = last_error();
  EXPECT_NE(error.find(name), std::string::npos) << error;
  EXPECT_NE(error.find("GiB"), std::string::npos) << error;
  EXPECT_NE(error.find("free"), std::string::npos) << error;
  EXPECT_NE(error.find("--shm-size"), std::string::npos) << error;
  EXPECT_FALSE(shm_file_exists(name)) << "a failed create leaves nothing behind";
}

TEST(ShmSegment, NameCarriesHostIdPidAndSequence) {
  EXPECT_EQ(segment_name(0x1234abcdull, 4242, 7), "/cohort-000000001234abcd-4242-7");
  EXPECT_EQ(segment_name(~0ull, 1, ~0ull), "/cohort-ffffffffffffffff-1-18446744073709551615");
  EXPECT_NE(segment_name(1, 2, 3), segment_name(1, 2, 4));
}

// ---- stale cleanup ---------------------------------------------------------------------------

TEST(ShmSegmentStale, RemovesOnlySegmentsOfDeadCreatorsOfThisHost) {
  uint64_t host = test_host_id();
  int dead = dead_pid();
  ASSERT_NE(kill(dead, 0), 0);
  RawFiles files;
  std::vector<std::string> stale = {segment_name(host, dead, 0), segment_name(host, dead, 1)};
  std::string live = segment_name(host, getpid(), 100);
  std::string foreign = segment_name(host ^ 1, dead, 0);
  for (const std::string &name : stale) ASSERT_TRUE(files.make(name)) << name;
  ASSERT_TRUE(files.make(live));
  ASSERT_TRUE(files.make(foreign));

  EXPECT_EQ(remove_stale_segments(host), 2);
  for (const std::string &name : stale) EXPECT_FALSE(shm_file_exists(name)) << name;
  EXPECT_TRUE(shm_file_exists(live)) << "its creator (this process) still runs";
  EXPECT_TRUE(shm_file_exists(foreign)) << "another host id is another host's business";
  EXPECT_EQ(remove_stale_segments(host), 0);
}

TEST(ShmSegmentStale, LeavesLookAlikeNamesAlone) {
  uint64_t host = test_host_id();
  std::string hex = segment_name(host, 1, 0).substr(8, 16);
  std::string upper_hex = hex;
  for (char &c : upper_hex) c = static_cast<char>(toupper(c));
  std::string pid = std::to_string(dead_pid());
  std::string base = "/cohort-" + hex + "-" + pid;
  std::vector<std::string> look_alikes = {
      base,                                           // no sequence
      base + "-",                                     // empty sequence
      base + "-3x",                                   // trailing garbage
      base + "-3.tmp",                                // a suffix
      base + "-3-4",                                  // an extra field
      base + "-03",                                   // a leading zero segment_name never writes
      "/cohort-" + hex + "-0" + pid + "-3",           //
      "/cohort-" + hex + "-+" + pid + "-3",           // a sign
      "/cohort-" + hex + "-0-3",                      // pid 0: kill() would signal our group
      "/cohort-" + hex + "-99999999999-3",            // beyond any pid
      "/cohort-" + upper_hex + "-" + pid + "-3",      // upper-case host id
      "/cohort-" + hex.substr(1) + "-" + pid + "-3",  // 15 hex digits
      "/cohort-0" + hex + "-" + pid + "-3",           // 17 hex digits
      "/xcohort-" + hex + "-" + pid + "-3",           // another prefix
      "/Cohort-" + hex + "-" + pid + "-3",
  };
  RawFiles files;
  for (const std::string &name : look_alikes) ASSERT_TRUE(files.make(name)) << name;
  EXPECT_EQ(remove_stale_segments(host), 0);
  for (const std::string &name : look_alikes) EXPECT_TRUE(shm_file_exists(name)) << name;
}

// ---- Mailbox -------------------------------------------------------------------------------

// Memory for a mailbox outside shared memory, aligned as init() requires.
class MailboxMemory {
 public:
  explicit MailboxMemory(size_t capacity)
      : bytes_(Mailbox::bytes_for(capacity)),
        memory_(static_cast<char *>(std::aligned_alloc(Mailbox::kAlign, bytes_))) {}
  ~MailboxMemory() { std::free(memory_); }
  char *get() { return memory_; }

 private:
  size_t bytes_;
  char *memory_;
};

TEST(MailboxCapacity, RejectsNonPowersOfTwoAndTooSmall) {
  for (size_t capacity : {size_t{0}, size_t{8}, size_t{32}, size_t{72}, size_t{100}, size_t{192},
                          (size_t{1} << 20) + 64}) {
    EXPECT_EQ(Mailbox::check_capacity(capacity), COHORT_ERR_INVALID_ARG) << capacity;
    EXPECT_NE(last_error().find(std::to_string(capacity)), std::string::npos) << last_error();
    EXPECT_NE(last_error().find("power of two"), std::string::npos) << last_error();
    EXPECT_EQ(Mailbox::bytes_for(capacity), 0u) << capacity;
  }
  for (size_t capacity : {size_t{64}, size_t{128}, size_t{1} << 20}) {
    EXPECT_EQ(Mailbox::check_capacity(capacity), COHORT_SUCCESS) << capacity;
    EXPECT_GE(Mailbox::bytes_for(capacity), capacity + 3 * 64);
    EXPECT_EQ(Mailbox::bytes_for(capacity) % Mailbox::kAlign, 0u) << "mailboxes stack aligned";
  }
}

TEST(MailboxCapacity, InitRejectsBadCapacityAndMisalignedMemory) {
  MailboxMemory memory(128);
  EXPECT_EQ(Mailbox::init(memory.get(), 100), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(Mailbox::init(memory.get() + 8, 64), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("aligned"), std::string::npos) << last_error();
  EXPECT_EQ(Mailbox::init(memory.get(), 128), COHORT_SUCCESS) << last_error();
}

TEST(Mailbox, ValidateCatchesMissingAndOverwrittenHeaders) {
  MailboxMemory memory(128);
  std::memset(memory.get(), 0, Mailbox::bytes_for(128));
  EXPECT_EQ(Mailbox::validate(memory.get(), 128), COHORT_ERR_INTERNAL);
  EXPECT_NE(last_error().find("magic"), std::string::npos) << last_error();
  ASSERT_EQ(Mailbox::init(memory.get(), 128), COHORT_SUCCESS);
  EXPECT_EQ(Mailbox::validate(memory.get(), 128), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(Mailbox::validate(memory.get(), 256), COHORT_ERR_INTERNAL);
  EXPECT_NE(last_error().find("capacity 128"), std::string::npos) << last_error();
  uint64_t tail = 1 << 20;  // the layout (mailbox.h): the writer's counter opens line 1
  std::memcpy(memory.get() + 64, &tail, sizeof tail);
  EXPECT_EQ(Mailbox::validate(memory.get(), 128), COHORT_ERR_INTERNAL);
  EXPECT_NE(last_error().find("exceed"), std::string::npos) << last_error();
}

// Writes `n` bytes of `src` (n a multiple of 8) however the ring lends space; false if it
// stops lending before all fit.
bool write_all(MailboxWriter *writer, const unsigned char *src, size_t n) {
  while (n > 0) {
    size_t lent;
    void *space = writer->reserve(&lent);
    if (lent == 0) return false;
    size_t chunk = std::min(lent, n);
    std::memcpy(space, src, chunk);
    writer->commit(chunk);
    src += chunk;
    n -= chunk;
  }
  return true;
}

bool read_all(MailboxReader *reader, unsigned char *dst, size_t n) {
  while (n > 0) {
    size_t lent;
    const void *bytes = reader->peek(&lent);
    if (lent == 0) return false;
    size_t chunk = std::min(lent, n);
    std::memcpy(dst, bytes, chunk);
    reader->consume(chunk);
    dst += chunk;
    n -= chunk;
  }
  return true;
}

std::vector<unsigned char> byte_pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(seed * 31 + i * 7 + 1);
  return bytes;
}

// Starting at every offset of the ring: fills it whole (the lent run stops at the wrap point,
// then continues from the start), finds it full, drains it in the same two runs, and sends
// every message size through it.
void fill_and_drain_at_every_offset(size_t capacity) {
  MailboxMemory memory(capacity);
  for (size_t offset = 0; offset < capacity; offset += kChannelAlign) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    ASSERT_EQ(Mailbox::init(memory.get(), capacity), COHORT_SUCCESS);
    MailboxWriter writer(memory.get());
    MailboxReader reader(memory.get());
    std::vector<unsigned char> skip(offset), out(capacity);
    ASSERT_TRUE(write_all(&writer, skip.data(), offset));
    ASSERT_TRUE(read_all(&reader, skip.data(), offset));

    size_t lent;
    reader.peek(&lent);
    EXPECT_EQ(lent, 0u) << "empty";
    writer.reserve(&lent);
    EXPECT_EQ(lent, capacity - offset) << "the run up to the wrap point";
    std::vector<unsigned char> full = byte_pattern(capacity, static_cast<unsigned>(offset));
    ASSERT_TRUE(write_all(&writer, full.data(), capacity));
    writer.reserve(&lent);
    EXPECT_EQ(lent, 0u) << "full";
    reader.peek(&lent);
    EXPECT_EQ(lent, capacity - offset);
    ASSERT_TRUE(read_all(&reader, out.data(), capacity));
    EXPECT_EQ(out, full);
    reader.peek(&lent);
    EXPECT_EQ(lent, 0u) << "drained";

    for (size_t size = kChannelAlign; size <= capacity; size += kChannelAlign) {
      std::vector<unsigned char> message = byte_pattern(size, static_cast<unsigned>(size));
      ASSERT_TRUE(write_all(&writer, message.data(), size)) << size;
      ASSERT_TRUE(read_all(&reader, out.data(), size)) << size;
      ASSERT_TRUE(std::equal(message.begin(), message.end(), out.begin())) << size;
    }
  }
}

TEST(Mailbox, FillAndDrainWrapAtEveryOffset64) { fill_and_drain_at_every_offset(64); }
TEST(Mailbox, FillAndDrainWrapAtEveryOffset128) { fill_and_drain_at_every_offset(128); }

TEST(Mailbox, ReaderSeesOnlyCommittedBytesAndPartialCommitsKeepTheRest) {
  MailboxMemory memory(128);
  ASSERT_EQ(Mailbox::init(memory.get(), 128), COHORT_SUCCESS);
  MailboxWriter writer(memory.get());
  MailboxReader reader(memory.get());
  size_t lent, arrived;
  auto *space = static_cast<uint64_t *>(writer.reserve(&lent));
  ASSERT_EQ(lent, 128u);
  space[0] = 11;
  space[1] = 22;
  reader.peek(&arrived);
  EXPECT_EQ(arrived, 0u) << "written but not committed";
  writer.commit(8);
  auto *next = static_cast<uint64_t *>(writer.reserve(&lent));
  EXPECT_EQ(next, space + 1) << "the uncommitted rest is lent again";
  EXPECT_EQ(lent, 120u);
  const auto *front = static_cast<const uint64_t *>(reader.peek(&arrived));
  ASSERT_EQ(arrived, 8u);
  EXPECT_EQ(front[0], 11u);
  reader.consume(0);  // nothing yet: allowed, and changes nothing
  reader.peek(&arrived);
  EXPECT_EQ(arrived, 8u);
}

// Each end caches the other's counter; a cached value that still shows some room or some
// bytes must not hide more that came since.
TEST(Mailbox, EachEndSeesAllProgressSinceItsLastLook) {
  MailboxMemory memory(128);
  ASSERT_EQ(Mailbox::init(memory.get(), 128), COHORT_SUCCESS);
  MailboxWriter writer(memory.get());
  MailboxReader reader(memory.get());
  size_t lent;
  writer.reserve(&lent);
  writer.commit(8);
  reader.peek(&lent);
  EXPECT_EQ(lent, 8u);
  writer.reserve(&lent);
  writer.commit(lent);
  reader.peek(&lent);
  EXPECT_EQ(lent, 128u) << "bytes committed after the reader's last look";

  reader.consume(64);
  writer.reserve(&lent);
  EXPECT_EQ(lent, 64u);
  reader.peek(&lent);
  reader.consume(lent);
  writer.reserve(&lent);
  EXPECT_EQ(lent, 128u) << "space freed after the writer's last look";
}

// Streams `words` 64-bit words counting up from 0 in chunks of random multiples of 8 bytes,
// backing off while the ring is full.  Returns the words sent: fewer past `deadline` or once
// the consumer sets `abandon` (after a wrong word it stops reading).
uint64_t produce_counter(SendChannel *channel, uint64_t words, uint64_t seed, int64_t deadline,
                         const std::atomic<bool> *abandon) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<size_t> chunk_words(1, 512);
  Backoff backoff;
  uint64_t next = 0;
  while (next < words && now_ns() < deadline) {
    size_t lent;
    auto *space = static_cast<uint64_t *>(channel->reserve(&lent));
    if (lent == 0) {
      if (abandon != nullptr && abandon->load(std::memory_order_relaxed)) break;
      backoff.pause();
      continue;
    }
    backoff.reset();
    size_t n = std::min({chunk_words(random), lent / 8, static_cast<size_t>(words - next)});
    for (size_t i = 0; i < n; ++i) space[i] = next + i;
    channel->commit(n * 8);
    next += n;
  }
  return next;
}

struct Received {
  uint64_t words = 0;  // checked so far
  uint64_t first_wrong = ~0ull;
  bool gave_up = false;  // deadline passed, or the producer is gone
};

// Receives and checks produce_counter()'s words in chunks of other random sizes, backing off
// while the ring is empty.  `producer_gone` lets a consumer stop waiting for a dead process.
template <typename ProducerGone>
Received consume_counter(RecvChannel *channel, uint64_t words, uint64_t seed, int64_t deadline,
                         ProducerGone producer_gone) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<size_t> chunk_words(1, 512);
  Backoff backoff;
  Received got;
  bool last_look = false;
  while (got.words < words && got.first_wrong == ~0ull) {
    size_t lent;
    const auto *bytes = static_cast<const uint64_t *>(channel->peek(&lent));
    if (lent == 0) {
      if (last_look || now_ns() > deadline) {
        got.gave_up = true;
        break;
      }
      // Its last bytes may have landed between our peek and its exit: look once more.
      if (producer_gone()) last_look = true;
      backoff.pause();
      continue;
    }
    backoff.reset();
    size_t n = std::min(chunk_words(random), lent / 8);
    for (size_t i = 0; i < n && got.first_wrong == ~0ull; ++i) {
      if (bytes[i] != got.words + i) got.first_wrong = got.words + i;
    }
    channel->consume(n * 8);
    got.words += n;
  }
  return got;
}

constexpr uint64_t kStreamWords = (uint64_t{64} << 20) / 8;  // 64 MiB
constexpr size_t kStreamCapacity = 16 << 10;
constexpr double kStreamTimeoutS = 60;

TEST(Mailbox, TwoThreadsStream64MiBInRandomChunks) {
  MailboxMemory memory(kStreamCapacity);
  ASSERT_EQ(Mailbox::init(memory.get(), kStreamCapacity), COHORT_SUCCESS);
  int64_t deadline = deadline_after(kStreamTimeoutS);
  uint64_t sent = 0;
  std::atomic<bool> abandon{false};
  std::thread producer([&] {
    MailboxWriter writer(memory.get());
    sent = produce_counter(&writer, kStreamWords, 1, deadline, &abandon);
  });
  MailboxReader reader(memory.get());
  Received got = consume_counter(&reader, kStreamWords, 2, deadline, [] { return false; });
  abandon = true;
  producer.join();
  EXPECT_EQ(sent, kStreamWords);
  EXPECT_EQ(got.words, kStreamWords);
  EXPECT_EQ(got.first_wrong, ~0ull) << "first wrong word at index " << got.first_wrong;
  EXPECT_FALSE(got.gave_up);
}

// The child attaches by name as a peer rank would, and reports through its exit status.
[[noreturn]] void run_child_producer(const std::string &name, size_t bytes) {
  std::unique_ptr<ShmSegment> segment;
  if (ShmSegment::attach(name, bytes, &segment) != COHORT_SUCCESS) _exit(2);
  if (Mailbox::validate(segment->data(), kStreamCapacity) != COHORT_SUCCESS) _exit(3);
  MailboxWriter writer(segment->data());
  uint64_t sent =
      produce_counter(&writer, kStreamWords, 3, deadline_after(kStreamTimeoutS), nullptr);
  _exit(sent == kStreamWords ? 0 : 4);  // _exit: no destructors, no gtest teardown in the child
}

TEST(Mailbox, ForkedChildStreams64MiBToItsParent) {
  size_t bytes = Mailbox::bytes_for(kStreamCapacity);
  std::string name = fresh_name();
  std::unique_ptr<ShmSegment> segment;
  ASSERT_EQ(ShmSegment::create(name, bytes, &segment), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(Mailbox::init(segment->data(), kStreamCapacity), COHORT_SUCCESS);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) run_child_producer(name, bytes);

  MailboxReader reader(segment->data());
  int status = 0;
  bool reaped = false;
  auto child_gone = [&] {
    reaped = reaped || waitpid(child, &status, WNOHANG) == child;
    return reaped;
  };
  Backoff backoff;
  for (size_t arrived = 0;;) {
    reader.peek(&arrived);
    if (arrived > 0 || child_gone()) break;
    backoff.pause();
  }
  segment->unlink();  // bytes arrived, so the child has attached: as the connect phase does
  EXPECT_FALSE(shm_file_exists(name));

  Received got =
      consume_counter(&reader, kStreamWords, 4, deadline_after(kStreamTimeoutS), child_gone);
  if (!reaped && got.words != kStreamWords) kill(child, SIGKILL);  // it would wait forever
  if (!reaped) {
    ASSERT_EQ(waitpid(child, &status, 0), child);
  }
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: attach failed, 3: validate failed, 4: timed out";
  EXPECT_EQ(got.words, kStreamWords);
  EXPECT_EQ(got.first_wrong, ~0ull) << "first wrong word at index " << got.first_wrong;
}

}  // namespace
}  // namespace cohort::tl_host
