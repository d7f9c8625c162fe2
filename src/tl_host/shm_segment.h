// A POSIX shared-memory segment (shm_open + mmap) that the ranks of one host map to reach each
// other's mailboxes and buffers.
//
// Lifetime, so that a crashed job leaves nothing in /dev/shm:
// - one local rank create()s the segment under segment_name(), with its own pid in the name;
// - it tells the others (through the OOB) only after create() has returned, and they attach();
// - once every local rank has attached, the creator calls unlink(): the name is gone, the
//   mappings stay valid until each process unmaps or exits, and the kernel frees the memory
//   with the last mapping;
// - if the job dies before that, the name outlives it; the next job on the host calls
//   remove_stale_segments(), which unlinks every segment whose creator pid no longer runs.
// No file descriptor stays open: each is closed as soon as the memory is mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace cohort::tl_host {

class ShmSegment {
 public:
  // Creates and maps a new segment of `bytes` (> 0), zeroed, after checking /dev/shm has room
  // for it, so that a full /dev/shm is a named error here rather than a SIGBUS at first touch
  // (pages are allocated when first touched; see reserve_pages() for the race left).  An existing
  // segment of that name is an error.  The new segment unlinks itself when destroyed unless
  // unlink() ran already, so a failed connect phase leaves nothing behind.
  static Status create(const std::string &name, size_t bytes, std::unique_ptr<ShmSegment> *out);

  // Maps the existing segment `name`, which must be exactly `bytes` long.
  static Status attach(const std::string &name, size_t bytes, std::unique_ptr<ShmSegment> *out);

  ~ShmSegment();
  ShmSegment(const ShmSegment &) = delete;
  ShmSegment &operator=(const ShmSegment &) = delete;

  // Removes the name (idempotent; a name already removed by another rank is not an error).
  // The mapping stays valid.  A forked child must leave through _exit(): running the
  // creator's destructor in the child would unlink the parent's segment.
  void unlink();

  void *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &name() const { return name_; }

 private:
  ShmSegment(std::string name, void *data, size_t size, bool creator);

  std::string name_;
  void *data_;
  size_t size_;
  bool creator_;  // unlinks when destroyed, if unlink() has not run
  bool unlinked_ = false;
};

// "/cohort-<host id, 16 hex digits>-<creator pid>-<sequence>": unique per host and process, and
// remove_stale_segments() can tell from it whether the creator still runs.
std::string segment_name(uint64_t host_id, int creator_pid, uint64_t sequence);

// Unlinks the segments of this host id left by processes that no longer run (exact
// segment_name() form only; kill(pid, 0) fails with ESRCH) and returns how many it removed.
// Segments of live pids, of other host ids and names of any other form are never touched.
// Pids are only meaningful within one pid namespace: containers sharing /dev/shm must differ
// in host id (their hostnames do, unless set equal), or a live peer could look dead.
int remove_stale_segments(uint64_t host_id);

}  // namespace cohort::tl_host
