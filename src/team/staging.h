// A team's host side of collectives on device memory that run through host memory
// (coll_staged.cc): page-locked slots the stream copies pieces into and out of, and two words
// in page-locked memory mapped for the device, which order the stream and the team's queue:
//   ready  the stream writes piece k's number once its input is in its slot;
//   done   the queue writes it once the piece's host collective ended (its output is in the
//          slot, or it failed: the stream goes on, and the team's next call says why);
// and a third for a blocking call's kernel (staged_kernel.h):
//   finished  the kernel writes the piece's number once the output is in device memory.
// Piece numbers grow over the team's life (32-bit, compared cyclically, never 0), so no word is
// ever reset.  Beside the words, the lines of a small piece that carry their own flags
// (kernels/ll_line.h, team/lines_gate.h): as many as one piece takes, in and out.  Made in the
// calling thread's CUDA context at the team's first such call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "kernels/ll_line.h"
#include "team/coll_request.h"

namespace cohort {

// Whether `value` has reached `target` (cyclic, as the stream compares).
inline bool reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

// Writes `piece` into *done unless done reached it already (pieces end in order, and a failure
// ends the later ones too: done never goes back).
void advance_done(uint32_t *done, uint32_t piece);

// Numbers for `pieces` more pieces after *next (the first is the returned value + 1), moving
// *next on.  0 is never one of them (the flag of a line that carries nothing,
// kernels/ll_line.h): numbers that would wrap through it start after it.
uint32_t claim_pieces(uint32_t *next, size_t pieces);

// A gate that opens once *ready reached `piece`, and at its end counts `outstanding`
// (optional) down and writes `piece` into *done (never lowering it: pieces end in order, a
// failure ends the later ones too).
std::shared_ptr<RequestGate> piece_gate(uint32_t *ready, uint32_t *done, uint32_t piece,
                                        std::atomic<int> *outstanding);

// Where a stream call's pieces go: the slots and the words of the team's staging for a call
// made now, a captured call's own for a graph's replays (staged_replay.h).
struct StageSite {
  char *memory = nullptr;
  uint32_t *ready = nullptr;
  uint32_t *done = nullptr;
  // A piece of one kernel may go as lines (lines_gate.h) where the site has them: not a
  // captured call's, whose pieces are numbered alike at every replay (a line left by one replay
  // would pass for the next one's).
  kernels::LlLine *lines_in = nullptr;
  kernels::LlLine *lines_out = nullptr;
};

// A piece of a blocking call: open once the copy of its input into its slot ended (the event
// recorded after it, armed when the copy was enqueued).  Its end writes nothing: the calling
// thread watches the piece itself.
class CopyGate final : public RequestGate {
 public:
  explicit CopyGate(void *context) : context_(context) {}
  void arm(void *event) {
    event_ = event;
    armed_.store(true, std::memory_order_release);
  }
  bool open() const override;
  void end(Status) override {}

 private:
  void *context_;  // the progress engine's thread has none of its own
  void *event_ = nullptr;
  std::atomic<bool> armed_{false};
};

class Staging {
 public:
  static Status create(std::unique_ptr<Staging> *out);
  ~Staging();  // see drain()
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;

  // Slots of at least `bytes` in all; larger memory replaces the current one, which is freed
  // once the device is done with it.
  Status reserve(size_t bytes);
  char *memory() const { return memory_; }
  // Numbers for `pieces` more pieces (claim_pieces).
  uint32_t claim(size_t pieces) { return claim_pieces(&next_piece_, pieces); }
  // A gate that opens when the stream wrote `piece` into ready, and writes it into done.
  std::shared_ptr<RequestGate> gate(uint32_t piece);
  uint32_t *ready_word() const { return words_; }
  uint32_t *done_word() const { return words_ + kWordStride; }
  // A blocking call's kernel writes its piece here once its output is in device memory.
  uint32_t *finished_word() const { return words_ + 2 * kWordStride; }
  // The lines of a piece of one kernel (kLlMaxLines each way), mapped, zeroed at first.
  kernels::LlLine *lines_in() const { return lines_; }
  kernels::LlLine *lines_out() const { return lines_ + kernels::kLlMaxLines; }
  StageSite site() const { return {memory_, ready_word(), done_word(), lines_in(), lines_out()}; }

  // Around one call's stream work: after the team's previous call if that was on another
  // stream, and its end recorded.
  Status order(void *stream);
  Status finished(void *stream);
  // A send/recv group on several streams runs on the first: it waits for what the others
  // hold so far (join), and after the group the others wait for it (rejoin), as NCCL's groups.
  Status join(void *first, const std::vector<void *> &others);
  Status rejoin(void *first, const std::vector<void *> &others);
  // The stream of blocking calls, made at first use, and the events after their copies in
  // (one per slot).
  Status own_stream(void **stream);
  Status copy_event(size_t slot, void **event);
  std::shared_ptr<CopyGate> copy_gate() const { return std::make_shared<CopyGate>(context_); }
  // Waits up to `timeout_s` for the device to be done with every call's memory, then frees
  // what it is done with; what it may still touch is left allocated (said at WARN).
  void drain(double timeout_s);

 private:
  Staging() = default;
  struct Retired {
    char *memory;
    void *event;  // recorded after the last call that used it
  };
  void free_retired(bool all);
  static constexpr size_t kWordStride = 32;  // ready, done, finished on lines of their own
  static constexpr size_t kLinesAt = 512;    // bytes from the words to the lines

  void *context_ = nullptr;    // the CUDA context all of this lives in
  uint32_t *words_ = nullptr;  // mapped: ready, done, finished, then the lines
  kernels::LlLine *lines_ = nullptr;
  char *memory_ = nullptr;  // mapped
  size_t capacity_ = 0;
  uint32_t next_piece_ = 0;
  void *own_stream_ = nullptr;
  void *end_ = nullptr;   // recorded after each call
  void *join_ = nullptr;  // join / rejoin (a wait takes the record before it: one event serves)
  std::vector<void *> copy_events_;
  void *last_stream_ = nullptr;
  bool used_ = false;  // a call recorded end_
  std::vector<Retired> retired_;
};

}  // namespace cohort
