// A collective through host memory captured into a CUDA graph (coll_staged.cc).  Nothing can
// be queued on the team while the graph is captured: its host collectives run at each replay,
// and piece numbers taken from the team's staging now would repeat at every replay.  So the
// capture gets slots and words of its own, and ahead of the call's copies (or its kernel) three
// stream memory operations: ready and done back to 0, then 1 into a doorbell word.  The
// progress engine polls the doorbells of every live capture of its teams (ReplayHub::poll); a
// rung one it sets back to 0 and queues the replay's pieces, numbered 1..n at every replay.  No
// host node: the stream never waits for a host thread to start a replay, which cost about
// 30 us per replay.  While a team has live captures, the engine polls without sleeping
// (yielding its core), as NCCL's proxy thread does for captured network operations.  Calls
// queued on the host before a replay's pieces may wait for it on their stream: a replay's piece
// whose gate opened runs ahead of them (CollFront::promote_replay).
//
// The graph owns this (a CUDA user object).  Its destruction runs on a driver thread that may
// not call CUDA: it marks the replay gone (the engine stops polling it) and hands it to a list
// that the next call through host memory, of any team, frees.  A replay after its team went
// away runs nothing: the engine (which adopts the hub of a team going away with live captures)
// writes every piece's number into done, so the stream goes on (its output is not a result),
// and says so at WARN.  One replay of a capture runs at a time (CUDA orders an instance's
// launches): two instances of one graph replayed at once would share the capture's memory,
// which the second's doorbell finds busy: it queues nothing (its output is not a result) and
// says so at WARN.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "team/coll_front.h"

namespace cohort {

class StagedReplay;

// What a team's replays reach it through: `front` is null once the team is gone.
struct ReplayHub {
  std::mutex mutex;
  CollFront *front = nullptr;
  std::string team;                  // its name, for messages after it went away
  std::vector<StagedReplay *> live;  // captures whose graphs exist (under mutex)
  std::atomic<int> live_count{0};    // live.size(), read without the lock

  // Starts polling `replay`'s doorbell.
  void add(StagedReplay *replay);
  // One look at every live capture's doorbell: a rung one's pieces are queued on the team (or
  // skipped once it is gone); captures whose graphs went away are dropped.  True when one rang.
  bool poll();
  // Stops polling `replay` (before it is freed).
  void remove(StagedReplay *replay);
};

class StagedReplay {
 public:
  // Memory of `bytes` for the slots (at least 1), and the words; in the calling thread's
  // context, which captures a graph (allocated in CUDA's relaxed capture mode).
  static Status create(std::shared_ptr<ReplayHub> hub, const char *what, size_t bytes,
                       std::unique_ptr<StagedReplay> *out);
  ~StagedReplay();  // frees the memory: only on a thread that may call CUDA
  StagedReplay(const StagedReplay &) = delete;
  StagedReplay &operator=(const StagedReplay &) = delete;

  StageSite site() const { return {memory_, words_, words_ + kWordStride, nullptr, nullptr}; }
  // Captures the replay's start on `stream`: ready and done to 0, then the doorbell to 1.
  Status capture_ring(void *stream);
  // A collective's pieces, or a send/recv group's operations on the capture's memory (one
  // piece).
  std::vector<StagedRun> &runs() { return runs_; }
  void set_group(std::vector<P2POp> ops) {
    group_ = std::move(ops);
    is_group_ = true;
  }
  const std::vector<P2POp> *group() const { return is_group_ ? &group_ : nullptr; }
  size_t pieces() const { return is_group_ ? 1 : runs_.size(); }
  // The graph's destruction (cuda::retain_in_capture): `data` is the replay.
  static void on_graph_gone(void *data);
  // Frees the replays whose graphs went away since the last call (a thread with a context).
  static void free_gone();

  // For CollFront::queue_replay: every piece outstanding (the stream reset the words), and the
  // gate of piece k (from 1).
  void restart();
  std::shared_ptr<RequestGate> gate(uint32_t piece);

 private:
  friend struct ReplayHub;
  StagedReplay() = default;
  bool rung();                    // the doorbell rang: it is set back to 0
  void replay(CollFront *front);  // under the hub's lock; front null once the team is gone
  void skip(const char *why);     // the stream goes on, nothing runs
  static constexpr size_t kWordStride = 32;  // ready, done, doorbell on lines of their own

  std::shared_ptr<ReplayHub> hub_;
  const char *what_ = "";
  void *context_ = nullptr;
  uint32_t *words_ = nullptr;  // mapped: ready, done
  char *memory_ = nullptr;     // mapped slots
  std::vector<StagedRun> runs_;
  std::vector<P2POp> group_;
  bool is_group_ = false;
  std::atomic<int> outstanding_{0};  // pieces queued and not ended
  std::atomic<bool> gone_{false};    // the graph went away: nothing rings any more
};

}  // namespace cohort
