// Collectives on device memory that run through host memory: on a team that spans hosts, or
// whose GPUs the device transport does not serve (no peer access between them).  The call is
// cut into pieces (staged_plan.h), each a host collective on page-locked slots, queued on the
// team at once, in call order with the team's other collectives, behind a gate that opens when
// the stream has copied the piece's input in (staging.h).  The stream copies each piece in,
// writes its number, waits for the queue to write it back, and copies the output out; a piece
// reuses the slot of the piece kSlots before it once that one was copied out.  On a stream the
// caller's thread only enqueues; the progress engine (progress_engine.h) runs the pieces, so
// the copies of one piece overlap the wire of another and no host thread waits per call.  A
// blocking call is driven by its own thread instead (run_staged_blocking).  A call of one small
// piece puts its copies and its wait into one kernel instead (staged_kernel.h), blocking or not.
// A stream call captured into a CUDA graph queues its pieces at each replay instead, when the
// progress engine sees the doorbell that the stream rings ahead of its copies (staged_replay.h).
#include <atomic>
#include <optional>

#include "core/clock.h"
#include "core/cuda_stream.h"
#include "core/log.h"
#include "team/coll_front.h"
#include "team/lines_gate.h"
#include "team/progress_engine.h"
#include "team/staged_kernel.h"
#include "team/staged_plan.h"
#include "team/staged_replay.h"

namespace cohort {
namespace {

constexpr size_t kSlots = 4;

// A piece's host collective, on its slot.
CollCall piece_call(const CollCall &call, const StagedPiece &p, char *slot) {
  CollCall c;
  c.collective = call.collective;
  c.count = p.count;
  c.dtype = call.dtype;
  c.op = call.op;
  c.root = call.root;
  c.src = p.has_src ? slot + p.src_offset : nullptr;
  c.dst = p.has_dst ? slot + p.dst_offset : nullptr;
  return c;
}

// Piece k's slot in staging memory from `memory`: the pieces take the slots in turn.
char *slot_of(char *memory, const StagedPlan &plan, size_t k) {
  return memory + (k % kSlots) * plan.slot_bytes;
}

// Piece k's input from the call's buffer into its slot, and its output back, on `stream`.
Status copy_in(const CollCall &call, const StagedPlan &plan, char *memory, size_t k, void *stream) {
  const StagedCopy &in = plan.pieces[k].in;
  return cuda::copy_async(slot_of(memory, plan, k) + in.slot_offset,
                          static_cast<const char *>(call.src) + in.device_offset, in.bytes, stream,
                          "copying a piece of device memory into host memory");
}
Status copy_out(const CollCall &call, const StagedPlan &plan, char *memory, size_t k,
                void *stream) {
  const StagedCopy &out = plan.pieces[k].out;
  return cuda::copy_async(static_cast<char *>(call.dst) + out.device_offset,
                          slot_of(memory, plan, k) + out.slot_offset, out.bytes, stream,
                          "copying a piece of the result back to device memory");
}

}  // namespace

CollFront::~CollFront() {
  if (hub_) {  // replays of graphs captured on this team find it gone from now on
    {
      std::lock_guard<std::mutex> lock(hub_->mutex);
      hub_->front = nullptr;
    }
    // Their doorbells still need an answer, or their streams wait forever.
    if (hub_->live_count.load() > 0) ProgressEngine::instance().adopt(hub_);
  }
  ProgressEngine::instance().forget(this);
}

bool CollFront::staged() const {
  return info_.layout.node_count > 1 || !device_ || !device_->active();
}

// Every piece's host collective, checked and chosen before anything is queued or enqueued: a
// refusal leaves nothing behind, on every rank alike.
Status CollFront::prepare_pieces(const CollCall &call, const StagedPlan &plan, char *memory,
                                 std::vector<StagedRun> *runs) {
  runs->resize(plan.pieces.size());
  for (size_t k = 0; k < plan.pieces.size(); ++k) {
    StagedRun &run = (*runs)[k];
    run.call = piece_call(call, plan.pieces[k], slot_of(memory, plan, k));
    Status s = choose(run.call, &run.args, &run.rule);
    if (is_error(s)) return s;
    if (run.rule == nullptr) {
      return failf(COHORT_ERR_INTERNAL, "%s through host memory: piece %zu has nothing to move",
                   coll::collective_name(call.collective), k);
    }
  }
  return COHORT_SUCCESS;
}

// The stream's part: piece k in, its number into ready; piece k - kSlots waited for and out
// before k reuses its slot; the last ones out at the end.
Status CollFront::enqueue_copies(const CollCall &call, const StagedPlan &plan,
                                 const StageSite &site, uint32_t first, void *stream) {
  auto finish_piece = [&](size_t k) {
    Status s = cuda::wait_word(site.done, first + static_cast<uint32_t>(k) + 1, stream,
                               "waiting for a piece's host collective");
    return is_error(s) ? s : copy_out(call, plan, site.memory, k, stream);
  };
  Status s = COHORT_SUCCESS;
  const size_t n = plan.pieces.size();
  for (size_t k = 0; k < n && !is_error(s); ++k) {
    if (k >= kSlots) s = finish_piece(k - kSlots);
    if (!is_error(s)) s = copy_in(call, plan, site.memory, k, stream);
    if (!is_error(s)) {
      s = cuda::write_word(site.ready, first + static_cast<uint32_t>(k) + 1, stream,
                           "announcing a piece in host memory");
    }
  }
  for (size_t k = n > kSlots ? n - kSlots : 0; k < n && !is_error(s); ++k) s = finish_piece(k);
  return s;
}

bool CollFront::staged_by_kernel(const StagedPlan &plan) const {
  if (plan.pieces.size() != 1) return false;
  const StagedPiece &p = plan.pieces[0];
  return p.in.bytes <= kernel_bytes_ && p.out.bytes <= kernel_bytes_ && kernel_bytes_ > 0 &&
         staged_kernel_usable();
}

bool CollFront::staged_by_lines(const StagedPlan &plan, const StageSite &site) const {
  static_assert(kernels::kLlMaxBytes == 4096, "COHORT_STAGED_LINES_BYTES's range (params.cc)");
  const StagedPiece &p = plan.pieces[0];
  return site.lines_in != nullptr && p.in.bytes <= lines_bytes_ && p.out.bytes <= lines_bytes_;
}

// The host's side of a piece as lines: its gate (lines_gate.h).
std::shared_ptr<RequestGate> CollFront::lines_gate_of(const StagedPlan &plan, const StageSite &site,
                                                      uint32_t piece) {
  const StagedPiece &p = plan.pieces[0];
  LinesPiece lp;
  lp.in_lines = site.lines_in;
  lp.in_slot = slot_of(site.memory, plan, 0) + p.in.slot_offset;
  lp.in_bytes = p.in.bytes;
  lp.out_lines = site.lines_out;
  lp.out_slot = slot_of(site.memory, plan, 0) + p.out.slot_offset;
  lp.out_bytes = p.out.bytes;
  lp.done = site.done;
  lp.piece = piece;
  return lines_gate(lp);
}

// The stream's part of a call of one piece, as one kernel.
Status CollFront::enqueue_kernel(const CollCall &call, const StagedPlan &plan,
                                 const StageSite &site, uint32_t piece, bool blocking, bool lines,
                                 void *stream) {
  const StagedPiece &p = plan.pieces[0];
  StagedKernelPiece k;
  k.in_bytes = p.in.bytes;
  if (k.in_bytes > 0) {
    k.in_src = static_cast<const char *>(call.src) + p.in.device_offset;
    k.in_dst = slot_of(site.memory, plan, 0) + p.in.slot_offset;
  }
  k.out_bytes = p.out.bytes;
  if (k.out_bytes > 0) {
    k.out_src = slot_of(site.memory, plan, 0) + p.out.slot_offset;
    k.out_dst = static_cast<char *>(call.dst) + p.out.device_offset;
  }
  k.ready = site.ready;
  k.done = site.done;
  k.piece = piece;
  if (blocking) k.finished = staging_->finished_word();
  if (lines) {
    k.lines_in = site.lines_in;
    k.lines_out = site.lines_out;
  }
  k.timeout_s = timeout_s_;
  return launch_staged_kernel(k, stream);
}

Status CollFront::stage_on(const char *what, void **stream, bool blocking, bool *capturing) {
  Status s = cuda::stream_ops_available();
  bool captured = false;
  if (!is_error(s) && !blocking) {
    s = cuda::stream_capturing(*stream, "asking the stream's capture state");
    captured = s == COHORT_IN_PROGRESS;
    if (captured) s = COHORT_SUCCESS;
  }
  // Allocations while the thread captures: in CUDA's relaxed mode (a capture in the global
  // or this thread's mode refuses them).
  std::optional<cuda::RelaxedCapture> relaxed;
  if (captured) relaxed.emplace();
  StagedReplay::free_gone();
  if (!is_error(s) && !staging_) {
    s = Staging::create(&staging_);
    if (!is_error(s))
      COHORT_LOG_INFO(COLL,
                      "%s: collectives on device memory run through host memory (%s): pieces of "
                      "%zu bytes, %zu slots, copies on the caller's stream",
                      info_.name.c_str(), staged_reason().c_str(), chunk_bytes_, kSlots);
  }
  if (!is_error(s) && blocking) s = staging_->own_stream(stream);
  if (!is_error(s) && captured) s = cuda::capture_ops_available();
  if (!is_error(s) && captured && capturing == nullptr) {
    return failf(COHORT_ERR_NOT_SUPPORTED,
                 "%s on GPU device memory through host memory (team '%s': %s): capturing it "
                 "into a CUDA graph on several streams is not supported yet; put the group on "
                 "one stream, or run it eagerly",
                 what, info_.name.c_str(), staged_reason().c_str());
  }
  if (capturing != nullptr) *capturing = captured;
  if (is_error(s)) {
    return failf(s, "%s on GPU device memory through host memory (team '%s'): %s", what,
                 info_.name.c_str(), last_error().c_str());
  }
  return COHORT_SUCCESS;
}

Status CollFront::run_staged(const CollCall &call, void *stream, bool blocking) {
  const int64_t began_ns = now_ns();
  bool capturing = false;
  Status s = stage_on(coll::collective_name(call.collective), &stream, blocking, &capturing);
  if (is_error(s)) return s;
  const StagedPlan plan = plan_staged(call, info_.rank, info_.size, chunk_bytes_);
  if (capturing) return capture_staged(call, plan, stream);
  const size_t slots = std::min(kSlots, plan.pieces.size());
  std::vector<StagedRun> runs;
  s = staging_->reserve(std::max<size_t>(1, slots * plan.slot_bytes));
  if (!is_error(s)) s = prepare_pieces(call, plan, staging_->memory(), &runs);
  if (is_error(s)) return s;
  const bool by_kernel = staged_by_kernel(plan);
  if (blocking && !by_kernel) return run_staged_blocking(call, plan, &runs, stream);
  const StageSite site = staging_->site();
  const bool by_lines = by_kernel && staged_by_lines(plan, site);
  const uint32_t first = staging_->claim(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    const uint32_t piece = first + static_cast<uint32_t>(k) + 1;
    runs[k].request = std::make_shared<CollRequest>();
    runs[k].request->gate = by_lines ? lines_gate_of(plan, site, piece) : staging_->gate(piece);
    queue(runs[k].call, runs[k].args, *runs[k].rule, runs[k].request);
  }
  if (!blocking) ProgressEngine::instance().watch(this);
  s = staging_->order(stream);
  if (!is_error(s)) {
    s = by_kernel ? enqueue_kernel(call, plan, site, first + 1, blocking, by_lines, stream)
                  : enqueue_copies(call, plan, site, first, stream);
  }
  if (!is_error(s)) s = staging_->finished(stream);
  if (is_error(s)) return abandon_queued(s);
  COHORT_LOG_TRACE(COLL, "%s: %s of %zu piece(s) enqueued at %lld us, in %.1f us%s",
                   info_.name.c_str(), coll::collective_name(call.collective), runs.size(),
                   static_cast<long long>(now_ns() / 1000), (now_ns() - began_ns) / 1e3,
                   by_lines    ? ", as a kernel of lines"
                   : by_kernel ? ", as a kernel"
                               : "");
  if (!blocking) return COHORT_SUCCESS;
  // A blocking call of one piece as a kernel: this thread runs the piece, which opens once the
  // kernel announced its input, and then waits for the kernel to copy the output back.
  s = wait(runs[0].request);
  if (!is_error(s)) return await_finished(first + 1, stream);
  const std::string why = last_error();
  drain_stream(stream, "a collective through host memory");  // its output is not the result
  return fail(s, why);
}

// The kernel of a blocking call wrote its output: it writes `piece` into the finished word
// then, a few microseconds before the stream notices its end.  The stream is asked too now and
// then (a kernel that gave up writes nothing).
Status CollFront::await_finished(uint32_t piece, void *stream) {
  std::atomic_ref<uint32_t> word(*staging_->finished_word());
  auto finished = [&] { return reached(word.load(std::memory_order_acquire), piece); };
  Backoff backoff(spins_);
  for (unsigned polls = 1;; ++polls) {
    if (finished()) return COHORT_SUCCESS;
    if (polls % 64 == 0) {
      Status s = cuda::stream_query(stream, "a collective through host memory");
      if (s != COHORT_IN_PROGRESS) {
        if (is_error(s) || finished()) return s;  // it may have landed since the first look
        return failf(COHORT_ERR_INTERNAL,
                     "%s: a collective through host memory ended without its output (piece %u)",
                     info_.name.c_str(), piece);
      }
    }
    backoff.pause();
  }
}

// A blocking call, driven by the calling thread, which waits anyway: the stream (the team's
// own) only copies, and nothing on the GPU waits for host memory.  Piece k runs once the
// event after its copy in ended; once it ran, its output is copied back and piece k + kSlots
// copied into the slot.  The pieces are queued at once like a stream call's.
Status CollFront::run_staged_blocking(const CollCall &call, const StagedPlan &plan,
                                      std::vector<StagedRun> *runs, void *stream) {
  Staging &st = *staging_;
  const size_t n = runs->size();
  std::vector<std::shared_ptr<CopyGate>> gates(n);
  auto start_piece = [&](size_t k) {
    void *event = nullptr;
    Status s = copy_in(call, plan, st.memory(), k, stream);
    if (!is_error(s)) s = st.copy_event(k % kSlots, &event);
    if (!is_error(s)) s = cuda::event_record(event, stream, "recording a piece's copy");
    if (!is_error(s)) gates[k]->arm(event);
    return s;
  };
  for (size_t k = 0; k < n; ++k) {
    gates[k] = st.copy_gate();
    (*runs)[k].request = std::make_shared<CollRequest>();
    (*runs)[k].request->gate = gates[k];
    queue((*runs)[k].call, (*runs)[k].args, *(*runs)[k].rule, (*runs)[k].request);
  }
  Status s = st.order(stream);
  for (size_t k = 0; k < std::min(n, kSlots) && !is_error(s); ++k) s = start_piece(k);
  bool piece_failed = false;  // then the team stopped already, told every peer
  for (size_t k = 0; k < n && !is_error(s); ++k) {
    s = wait((*runs)[k].request);
    piece_failed = is_error(s);
    if (!is_error(s)) s = copy_out(call, plan, st.memory(), k, stream);
    if (!is_error(s) && k + kSlots < n) s = start_piece(k + kSlots);
  }
  const std::string why = is_error(s) ? last_error() : "";
  // A copy the driver refused: the queued pieces would wait for it, and the peers with them.
  if (is_error(s) && !piece_failed) stop(s, why, true);
  // The slots are the team's again only once the stream is done with them.
  Status ended = st.finished(stream);
  if (!is_error(ended)) ended = drain_stream(stream, "a collective through host memory");
  return is_error(s) ? fail(s, why) : ended;
}

// Nothing is queued now: the progress engine queues the pieces at each replay, when the
// stream rings the capture's doorbell, on the capture's own slots and words; the copies (or
// the kernel) follow the ring.  The graph owns the replay from the moment it is retained,
// before the ring is captured.
// Calls captured on several streams are not ordered with the team's other calls by Cohort:
// the graph's edges order them.
Status CollFront::capture_staged(const CollCall &call, const StagedPlan &plan, void *stream) {
  const char *what = coll::collective_name(call.collective);
  const size_t slots = std::min(kSlots, plan.pieces.size());
  std::unique_ptr<StagedReplay> owned;
  Status s = StagedReplay::create(replay_hub(), what, slots * plan.slot_bytes, &owned);
  if (!is_error(s)) s = prepare_pieces(call, plan, owned->site().memory, &owned->runs());
  if (is_error(s)) return s;
  StagedReplay *replay = owned.get();
  const bool by_kernel = staged_by_kernel(plan);
  s = capture_ring(std::move(owned), stream);
  if (!is_error(s)) {
    s = by_kernel ? enqueue_kernel(call, plan, replay->site(), 1, false, false, stream)
                  : enqueue_copies(call, plan, replay->site(), 0, stream);
  }
  if (is_error(s)) {
    return failf(s,
                 "%s on GPU device memory through host memory (team '%s'), captured into a "
                 "CUDA graph: %s",
                 what, info_.name.c_str(), last_error().c_str());
  }
  COHORT_LOG_INFO(COLL, "%s: %s of %zu piece(s) captured into a CUDA graph%s", info_.name.c_str(),
                  what, plan.pieces.size(), by_kernel ? ", as a kernel" : "");
  return COHORT_SUCCESS;
}

std::shared_ptr<ReplayHub> CollFront::replay_hub() {
  if (!hub_) {
    hub_ = std::make_shared<ReplayHub>();
    hub_->front = this;
    hub_->team = info_.name;
  }
  return hub_;
}

Status CollFront::capture_ring(std::unique_ptr<StagedReplay> replay, void *stream) {
  StagedReplay *r = replay.release();  // the graph's from here, or destroyed on failure
  Status s = cuda::retain_in_capture(stream, r, &StagedReplay::on_graph_gone,
                                     "handing a captured call's memory to its graph");
  if (!is_error(s)) s = r->capture_ring(stream);
  if (is_error(s)) return s;
  replay_hub()->add(r);
  ProgressEngine::instance().watch(this);
  return COHORT_SUCCESS;
}

Status CollFront::queue_replay(StagedReplay &replay) {
  auto replayed = [&](uint32_t piece, std::shared_ptr<CollRequest> request) {
    request->gate = replay.gate(piece);
    request->replayed = true;
    return request;
  };
  if (const std::vector<P2POp> *group = replay.group()) {  // a send/recv group: one request
    auto request = std::make_shared<CollRequest>();
    Status s = build_p2p(*group, request.get());  // built at capture already: not expected
    if (is_error(s)) return s;
    replay.restart();
    push(replayed(1, std::move(request)));
  } else {
    replay.restart();
    const std::vector<StagedRun> &runs = replay.runs();
    for (size_t k = 0; k < runs.size(); ++k) {
      queue(runs[k].call, runs[k].args, *runs[k].rule,
            replayed(static_cast<uint32_t>(k) + 1, std::make_shared<CollRequest>()));
    }
  }
  ProgressEngine::instance().watch(this);
  return COHORT_SUCCESS;
}

Status CollFront::abandon_queued(Status s) {
  const std::string why = last_error();
  stop(s, why, true);
  return fail(s, why);
}

Status CollFront::drain_stream(void *stream, const char *what) {
  Backoff backoff(spins_);
  for (;;) {
    Status s = cuda::stream_query(stream, what);
    if (s != COHORT_IN_PROGRESS) return s;
    if (progress_requests()) backoff.reset();
    backoff.pause();
  }
}

// The team is going away: its staged pieces run to their end first (they end at the latest at
// their timeout), so that a stream's calls enqueued before the destroy complete.
void CollFront::finish_staged() {
  if (staged_queued_.load() == 0) return;
  const int64_t deadline = deadline_after(timeout_s_ + 1);
  Backoff backoff;
  while (staged_queued_.load() > 0 && !stopped_) {
    if (now_ns() > deadline) {
      COHORT_LOG_WARN(COLL,
                      "team '%s' going away: %d collective piece(s) through host memory still "
                      "wait for their stream after %.3g s; they end unrun",
                      info_.name.c_str(), staged_queued_.load(), timeout_s_ + 1);
      return;
    }
    if (progress_requests()) backoff.reset();
    backoff.pause();
  }
}

std::string CollFront::staged_reason() const {
  if (info_.layout.node_count > 1) {
    return strprintf("it spans %d hosts", info_.layout.node_count);
  }
  if (!device_ || !device_->active()) return "the GPU path does not serve it";
  return "send/recv on device memory is not on the GPU path yet";
}

}  // namespace cohort
