#include "tl_host/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/log.h"

namespace cohort::tl_host {
namespace {

// Where glibc's shm_open() keeps segments as files.
constexpr const char *kShmDir = "/dev/shm";
constexpr std::string_view kFilePrefix = "cohort-";

// Closes a descriptor on every way out of a function.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() { close(fd_); }
  FdGuard(const FdGuard &) = delete;
  FdGuard &operator=(const FdGuard &) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// "64.0 MiB": sizes in messages that ask a user to act.
std::string format_bytes(double bytes) {
  static const char *const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? strprintf("%.0f B", bytes) : strprintf("%.1f %s", bytes, kUnits[unit]);
}

std::string shm_free_space() {
  struct statvfs fs;
  if (statvfs(kShmDir, &fs) != 0) return "an unknown amount";
  return format_bytes(static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize));
}

Status check_name(const std::string &name) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos ||
      name.size() - 1 > NAME_MAX) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "shared-memory segment name '%s': expected '/' then 1 to %d characters "
                 "without '/'",
                 name.c_str(), NAME_MAX);
  }
  return COHORT_SUCCESS;
}

// A failed create step: out of /dev/shm space gets the numbers and the remedy.
Status fail_to_create(const std::string &name, size_t bytes, const char *call, int err) {
  std::string size = format_bytes(static_cast<double>(bytes));
  if (err != ENOSPC && err != EFBIG && err != ENOMEM) {
    return failf(COHORT_ERR_SYSTEM, "shared-memory segment %s of %s: %s: %s", name.c_str(),
                 size.c_str(), call, strerror(err));
  }
  return failf(COHORT_ERR_NO_MEMORY,
               "shared-memory segment %s of %s: %s has %s free (%s: %s): enlarge %s "
               "(docker run --shm-size, or mount -o remount,size=... %s) or run fewer ranks "
               "per host",
               name.c_str(), size.c_str(), kShmDir, shm_free_space().c_str(), call, strerror(err),
               kShmDir, kShmDir);
}

// Sizes the segment.  tmpfs allocates its pages at first touch, and a /dev/shm too small
// for them would kill the job with SIGBUS then (the classic docker crash), so the free space
// is checked first and a shortfall is a named error.  Reserving every page now
// (posix_fallocate) would close the remaining race with other jobs filling /dev/shm in the
// meantime, but zeroing megabytes made team creation several times slower (0.66 ms of 0.89
// at 8 ranks); the pages are touched by the first collectives instead.
int reserve_pages(int fd, size_t bytes) {
  struct statvfs fs;
  if (fstatvfs(fd, &fs) == 0 &&
      static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) <
          static_cast<double>(bytes)) {
    return ENOSPC;
  }
  return ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
}

Status map_segment(const std::string &name, int fd, size_t bytes, void **data) {
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    return failf(err == ENOMEM ? COHORT_ERR_NO_MEMORY : COHORT_ERR_SYSTEM,
                 "shared-memory segment %s: mmap of %s: %s", name.c_str(),
                 format_bytes(static_cast<double>(bytes)).c_str(), strerror(err));
  }
  *data = p;
  return COHORT_SUCCESS;
}

// Sizes and maps the segment just created on fd; the caller unlinks it on failure.
Status size_and_map(const std::string &name, int fd, size_t bytes, void **data) {
  if (int err = reserve_pages(fd, bytes); err != 0)
    return fail_to_create(name, bytes, "sizing it", err);
  return map_segment(name, fd, bytes, data);
}

bool parse_hex16(std::string_view text, uint64_t *value) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    v = v << 4 | static_cast<uint64_t>(digit);
  }
  *value = v;
  return true;
}

// Decimal as "%d" / "%" PRIu64 write it: digits only, no sign, no leading zero.
bool parse_decimal(std::string_view text, uint64_t max, uint64_t *value) {
  if (text.empty() || text.size() > 19 || (text[0] == '0' && text.size() > 1)) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > max) return false;
  *value = v;
  return true;
}

struct SegmentOwner {
  uint64_t host_id;
  int pid;
};

// The host id and creator pid of a /dev/shm file named exactly as segment_name() names.
std::optional<SegmentOwner> parse_segment_file(std::string_view file) {
  if (!file.starts_with(kFilePrefix)) return std::nullopt;
  file.remove_prefix(kFilePrefix.size());
  size_t host_end = file.find('-');
  if (host_end == std::string_view::npos) return std::nullopt;
  size_t pid_end = file.find('-', host_end + 1);
  if (pid_end == std::string_view::npos) return std::nullopt;
  uint64_t host_id, pid, sequence;
  if (!parse_hex16(file.substr(0, host_end), &host_id) ||
      !parse_decimal(file.substr(host_end + 1, pid_end - host_end - 1), INT_MAX, &pid) ||
      !parse_decimal(file.substr(pid_end + 1), UINT64_MAX, &sequence) || pid == 0) {
    return std::nullopt;  // pid 0 would make kill() address our own process group
  }
  return SegmentOwner{host_id, static_cast<int>(pid)};
}

// EPERM means it runs under another user: alive all the same.
bool process_exists(int pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// Unlinks /dev/shm/<file>; false when another process removed it first or it cannot be.
bool unlink_stale(const char *file, int pid) {
  std::string name = std::string("/") + file;
  if (shm_unlink(name.c_str()) != 0) {
    if (errno != ENOENT) {
      COHORT_LOG_WARN(NET, "cannot remove stale shared-memory segment %s/%s: %s", kShmDir, file,
                      strerror(errno));
    }
    return false;
  }
  COHORT_LOG_INFO(NET, "removed stale shared-memory segment %s/%s: its creator, pid %d, is gone",
                  kShmDir, file, pid);
  return true;
}

}  // namespace

ShmSegment::ShmSegment(std::string name, void *data, size_t size, bool creator)
    : name_(std::move(name)), data_(data), size_(size), creator_(creator) {}

ShmSegment::~ShmSegment() {
  munmap(data_, size_);
  if (creator_) unlink();
}

Status ShmSegment::create(const std::string &name, size_t bytes, std::unique_ptr<ShmSegment> *out) {
  if (Status s = check_name(name); is_error(s)) return s;
  if (bytes == 0)
    return failf(COHORT_ERR_INVALID_ARG, "shared-memory segment %s of 0 bytes", name.c_str());
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    return failf(COHORT_ERR_SYSTEM,
                 "shared-memory segment %s already exists: another process made it, or an "
                 "earlier process with this pid left it (rm %s%s if no job uses it)",
                 name.c_str(), kShmDir, name.c_str());
  }
  if (fd < 0) return fail_to_create(name, bytes, "shm_open", errno);
  FdGuard guard(fd);
  void *data;
  if (Status s = size_and_map(name, fd, bytes, &data); is_error(s)) {
    shm_unlink(name.c_str());
    return s;
  }
  out->reset(new ShmSegment(name, data, bytes, true));
  return COHORT_SUCCESS;
}

Status ShmSegment::attach(const std::string &name, size_t bytes, std::unique_ptr<ShmSegment> *out) {
  if (Status s = check_name(name); is_error(s)) return s;
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0 && errno == ENOENT) {
    return failf(COHORT_ERR_SYSTEM,
                 "shared-memory segment %s does not exist: not created yet, or already "
                 "unlinked by its creator",
                 name.c_str());
  }
  if (fd < 0) {
    return failf(COHORT_ERR_SYSTEM, "shared-memory segment %s: shm_open: %s", name.c_str(),
                 strerror(errno));
  }
  FdGuard guard(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return failf(COHORT_ERR_SYSTEM, "shared-memory segment %s: fstat: %s", name.c_str(),
                 strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) != bytes) {
    return failf(COHORT_ERR_INVALID_USAGE,
                 "shared-memory segment %s is %jd bytes, expected %zu: ranks disagree on its "
                 "layout",
                 name.c_str(), static_cast<intmax_t>(st.st_size), bytes);
  }
  void *data;
  if (Status s = map_segment(name, fd, bytes, &data); is_error(s)) return s;
  out->reset(new ShmSegment(name, data, bytes, false));
  return COHORT_SUCCESS;
}

void ShmSegment::unlink() {
  if (unlinked_) return;
  unlinked_ = true;
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
    COHORT_LOG_WARN(NET, "cannot unlink shared-memory segment %s: %s", name_.c_str(),
                    strerror(errno));
  }
}

std::string segment_name(uint64_t host_id, int creator_pid, uint64_t sequence) {
  return strprintf("/cohort-%016" PRIx64 "-%d-%" PRIu64, host_id, creator_pid, sequence);
}

int remove_stale_segments(uint64_t host_id) {
  std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir(kShmDir), closedir);
  if (!dir) {
    COHORT_LOG_WARN(NET, "cannot scan %s for stale segments: %s", kShmDir, strerror(errno));
    return 0;
  }
  int removed = 0;
  while (const dirent *entry = readdir(dir.get())) {
    if (entry->d_type != DT_REG && entry->d_type != DT_UNKNOWN) continue;
    std::optional<SegmentOwner> owner = parse_segment_file(entry->d_name);
    if (!owner || owner->host_id != host_id || process_exists(owner->pid)) continue;
    if (unlink_stale(entry->d_name, owner->pid)) ++removed;
  }
  return removed;
}

}  // namespace cohort::tl_host
