// A collective through host memory captured into a CUDA graph (coll_staged.cc).  Nothing can
// be queued on the team while the graph is captured: its host collectives run at each replay,
// and piece numbers taken from the team's staging now would repeat at every replay.  So the
// graph gets, ahead of the call's copies (or its kernel), a host node that queues the call's
// pieces on the team when the stream reaches it, on slots and words of the capture's own; the
// node resets the words first, so the pieces are numbered 1..n at every replay.  Calls queued
// on the host before a replay's node ran may wait for it on their stream: a replay's piece
// whose gate opened runs ahead of them (CollFront::promote_replay).
//
// The graph owns this (a CUDA user object).  Its destruction runs on a driver thread that may
// not call CUDA: it hands the page-locked memory to a list that the next call through host
// memory, of any team, frees.  A replay after its team went away runs nothing: it writes every
// piece's number into done, so the stream goes on (its output is not a result), and says so at
// ERROR.  One replay of a capture runs at a time (CUDA orders an instance's launches): two
// instances of one graph replayed at once would share the capture's memory, which the second
// refuses at ERROR and does not touch.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "team/coll_front.h"

namespace cohort {

// What a team's replays reach it through: `front` is null once the team is gone.
struct ReplayHub {
  std::mutex mutex;
  CollFront *front = nullptr;
  std::string team;  // its name, for messages after it went away
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
  // A collective's pieces, or a send/recv group's operations on the capture's memory (one
  // piece).
  std::vector<StagedRun> &runs() { return runs_; }
  void set_group(std::vector<P2POp> ops) {
    group_ = std::move(ops);
    is_group_ = true;
  }
  const std::vector<P2POp> *group() const { return is_group_ ? &group_ : nullptr; }
  size_t pieces() const { return is_group_ ? 1 : runs_.size(); }
  // The host node (`data`: the replay) and the graph's destruction (cuda::retain_in_capture).
  static void on_replay(void *data);
  static void on_graph_gone(void *data);
  // Frees the replays whose graphs went away since the last call (a thread with a context).
  static void free_gone();

  // For CollFront::queue_replay: the words back to 0 for a replay of every piece, and the gate
  // of piece k (from 1).
  void restart();
  std::shared_ptr<RequestGate> gate(uint32_t piece);

 private:
  StagedReplay() = default;
  void replay();
  void skip(const char *why);  // the stream goes on, nothing runs
  static constexpr size_t kWordStride = 32;

  std::shared_ptr<ReplayHub> hub_;
  const char *what_ = "";
  void *context_ = nullptr;
  uint32_t *words_ = nullptr;  // mapped: ready, done
  char *memory_ = nullptr;     // mapped slots
  std::vector<StagedRun> runs_;
  std::vector<P2POp> group_;
  bool is_group_ = false;
  std::atomic<int> outstanding_{0};  // pieces queued and not ended
};

}  // namespace cohort
