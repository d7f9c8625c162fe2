#include "core/oob_socket.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "core/clock.h"
#include "core/log.h"
#include "core/rendezvous.h"

namespace cohort {
namespace {

constexpr int64_t kStatusIntervalNs = 1'000'000'000;  // a waiting member's view of arrivals
constexpr int64_t kRetryFirstNs = 50'000'000;         // connect retries: 50 ms doubling to 1 s
constexpr int64_t kRetryMaxNs = 1'000'000'000;
constexpr int kRefusalsMeanGone = 4;                // connects refused in a row (~0.75 s)
constexpr int64_t kFlushAtExitNs = 1'000'000'000;  // a closing OOB's last frames get this long

// An error frame carries the server's status in its sequence word, so every rank fails alike.
uint32_t error_word(Status s) { return static_cast<uint32_t>(static_cast<int32_t>(s)); }

uint64_t key_of(int channel, uint32_t seq) { return (uint64_t{uint16_t(channel)} << 32) | seq; }

struct Notice {
  int from;
  std::vector<char> data;
};

// One exchange as the server sees it: each rank's block, once it came.
struct Gather {
  std::vector<std::vector<char>> blocks;
  std::vector<char> have;
  int missing = 0;
  bool posted = false;  // the server posted its own request for it
  bool sent = false;    // the result went out to every member
  int64_t next_status_ns = 0;
  std::vector<char> status_sent;  // the arrival bitmap last sent
};

}  // namespace

struct SocketState {
  std::mutex mutex;
  UniqueIdWire id{};
  int size = 0;
  int rank = 0;
  bool server = false;
  int server_rank = -1;  // members: known once welcomed
  Status fatal = COHORT_SUCCESS;
  std::string fatal_why;
  std::map<int, uint32_t> next_seq;  // per channel
  std::map<int, std::deque<Notice>> notices;

  // Server.
  std::vector<std::unique_ptr<Conn>> members;  // by rank
  std::vector<std::string> gone;               // by rank: why its connection ended
  int connected = 0;
  std::map<uint64_t, Gather> gathers;

  // Member.
  std::unique_ptr<Conn> up;
  bool connecting = false;
  bool welcomed = false;
  int64_t retry_at_ns = 0;
  int64_t retry_ns = kRetryFirstNs;
  std::string connect_why;
  int refused = 0;
  std::map<uint64_t, std::vector<char>> results;
  std::map<uint64_t, std::vector<char>> arrived;  // the server's last bitmap per exchange
  std::vector<std::pair<uint64_t, std::vector<char>>> unsent_blocks;

  ~SocketState();
  Status pump();
  void set_fatal(Status s, const std::string &why);
  std::string describe_server() const;

  // Server side.
  void server_accept();
  void server_read(int r);
  void server_frame(int r, const Frame &f);
  void server_fail_all(Status s, const std::string &why);
  Gather &gather(uint64_t key);
  void server_advance(uint64_t key, Gather &g);
  void server_status(uint64_t key, Gather &g);
  // Member side.
  void member_connect();
  void connect_failed(const std::string &why, bool refused_now);
  void member_read();
  void member_frame(const Frame &f);
  void flush_all();
};

namespace {

std::vector<char> bitmap_of(const Gather &g) {
  std::vector<char> bits((g.have.size() + 7) / 8, 0);
  for (size_t r = 0; r < g.have.size(); ++r) {
    if (g.have[r]) bits[r / 8] = static_cast<char>(bits[r / 8] | (1 << (r % 8)));
  }
  return bits;
}

class SocketRequest final : public OobRequest {
 public:
  SocketRequest(SocketState *state, uint64_t key, size_t len)
      : state_(state), key_(key), len_(len) {}

  Status test() override;
  const char *result() const override { return result_.data(); }
  std::vector<int> absent(bool *known) const override;
  std::string absence_note() const override;

 private:
  SocketState *state_;
  uint64_t key_;
  size_t len_;
  std::vector<char> result_;
  bool done_ = false;
};

}  // namespace

SocketState::~SocketState() {
  // Frames still queued (a result, a notice) go out if the peers take them soon.
  const int64_t deadline = now_ns() + kFlushAtExitNs;
  Backoff backoff;
  for (;;) {
    flush_all();
    bool writing = up && up->writing();
    for (auto &m : members) writing = writing || (m && m->writing());
    if (!writing || now_ns() > deadline) break;
    backoff.pause();
  }
  if (server) unique_id_release(id.token);
}

void SocketState::flush_all() {
  std::string why;
  if (up && !connecting && !up->flush(&why)) {
    up.reset();
    if (!is_error(fatal)) set_fatal(COHORT_ERR_SYSTEM, "lost the connection to " +
                                                           describe_server() + ": " + why);
  }
  for (size_t r = 0; r < members.size(); ++r) {
    if (members[r] && !members[r]->flush(&why)) {
      gone[r] = why;
      members[r].reset();
    }
  }
}

void SocketState::set_fatal(Status s, const std::string &why) {
  if (is_error(fatal)) return;
  fatal = s;
  fatal_why = why;
  COHORT_LOG_WARN(OOB, "socket OOB, rank %d: %s", rank, why.c_str());
}

std::string SocketState::describe_server() const {
  std::string who = server_rank >= 0 ? "rank " + std::to_string(server_rank) + ", " : "";
  return "the id's creator (" + who + unique_id_describe(id) + ")";
}

Status SocketState::pump() {
  if (server) {
    server_accept();
    for (int r = 0; r < size; ++r) {
      if (members[r]) server_read(r);
    }
    for (auto &[key, g] : gathers) server_advance(key, g);
  } else {
    member_connect();
    if (up && !connecting) member_read();
  }
  flush_all();
  return fatal;
}

// ------------------------------------------------------------------------------- server

void SocketState::server_accept() {
  for (Arrival &a : unique_id_take_arrivals(id.token)) {
    const HelloBody &h = a.hello;
    if (h.size != size) {
      std::string why = "rank " + std::to_string(h.rank) + " (" + a.conn->peer() +
                        ") was given a team of " + std::to_string(h.size) + " ranks, rank " +
                        std::to_string(rank) + " (the id's creator) one of " +
                        std::to_string(size);
      server_fail_all(COHORT_ERR_INVALID_USAGE, why);
      a.conn->queue(FrameType::kError, 0, rank, error_word(fatal), why.data(), why.size());
      std::string ignored;
      a.conn->flush(&ignored);
      continue;
    }
    if (h.rank < 0 || h.rank >= size || h.rank == rank || members[h.rank]) {
      std::string why = "two processes joined as rank " + std::to_string(h.rank) + " (" +
                        a.conn->peer() + " and " +
                        (h.rank == rank ? std::string("the id's creator")
                                        : members[h.rank] ? members[h.rank]->peer()
                                                          : std::string("?")) +
                        "): give every process its own rank in 0.." + std::to_string(size - 1);
      if (h.rank < 0 || h.rank >= size) {
        why = "a process joined as rank " + std::to_string(h.rank) + " (" + a.conn->peer() +
              "), outside 0.." + std::to_string(size - 1);
      }
      server_fail_all(COHORT_ERR_INVALID_USAGE, why);
      a.conn->queue(FrameType::kError, 0, rank, error_word(fatal), why.data(), why.size());
      std::string ignored;
      a.conn->flush(&ignored);
      continue;
    }
    COHORT_LOG_TRACE(OOB, "socket OOB: rank %d joined from %s", h.rank, a.conn->peer().c_str());
    members[h.rank] = std::move(a.conn);
    members[h.rank]->queue(FrameType::kWelcome, 0, rank, 0, nullptr, 0);
    if (is_error(fatal)) {
      members[h.rank]->queue(FrameType::kError, 0, rank, error_word(fatal), fatal_why.data(),
                             fatal_why.size());
    }
    if (++connected == size - 1) unique_id_release(id.token);  // every member is here
  }
}

void SocketState::server_read(int r) {
  std::string why;
  bool open = members[r]->receive(&why);
  Frame f;
  std::string bad;
  while (members[r] && members[r]->next_frame(&f, &bad)) server_frame(r, f);
  if (!bad.empty()) {
    why = "it " + bad;
    open = false;
  }
  if (!open && members[r]) {
    gone[r] = why;
    members[r].reset();
    COHORT_LOG_TRACE(OOB, "socket OOB: rank %d's connection ended: %s", r, why.c_str());
  }
}

void SocketState::server_frame(int r, const Frame &f) {
  switch (f.type()) {
    case FrameType::kBlock: {
      Gather &g = gather(key_of(f.header.channel, f.header.seq));
      if (!g.have[r]) {
        g.blocks[r] = f.body;
        g.have[r] = 1;
        --g.missing;
      }
      break;
    }
    case FrameType::kNotice:
      notices[f.header.channel].push_back(Notice{r, f.body});
      for (int m = 0; m < size; ++m) {
        if (m != r && members[m]) {
          members[m]->queue(FrameType::kNotice, f.header.channel, r, 0, f.body.data(),
                            f.body.size());
        }
      }
      break;
    default:
      COHORT_LOG_WARN(OOB, "socket OOB: rank %d sent an unexpected frame (type %u), ignored", r,
                      f.header.type);
  }
}

Gather &SocketState::gather(uint64_t key) {
  auto it = gathers.find(key);
  if (it != gathers.end()) return it->second;
  Gather &g = gathers[key];
  g.blocks.resize(size);
  g.have.assign(size, 0);
  g.missing = size;
  return g;
}

void SocketState::server_fail_all(Status s, const std::string &why) {
  set_fatal(s, why);
  for (auto &m : members) {
    if (m) m->queue(FrameType::kError, 0, rank, error_word(s), why.data(), why.size());
  }
}

void SocketState::server_status(uint64_t key, Gather &g) {
  std::vector<char> bits = bitmap_of(g);
  if (bits == g.status_sent || now_ns() < g.next_status_ns) return;
  g.status_sent = bits;
  g.next_status_ns = now_ns() + kStatusIntervalNs;
  for (int r = 0; r < size; ++r) {
    if (members[r] && g.have[r]) {
      members[r]->queue(FrameType::kStatus, static_cast<uint16_t>(key >> 32), rank,
                        static_cast<uint32_t>(key), bits.data(), bits.size());
    }
  }
}

void SocketState::server_advance(uint64_t key, Gather &g) {
  if (!g.posted || g.sent) return;
  if (g.missing > 0) {
    for (int r = 0; r < size; ++r) {
      if (!g.have[r] && !members[r] && !gone[r].empty()) {
        server_fail_all(COHORT_ERR_SYSTEM, "rank " + std::to_string(r) +
                                               " left before sending its part: " + gone[r] +
                                               " (it exited, aborted or gave up)");
        return;
      }
    }
    server_status(key, g);
    return;
  }
  std::vector<char> all;
  for (auto &b : g.blocks) all.insert(all.end(), b.begin(), b.end());
  for (auto &m : members) {
    if (m) {
      m->queue(FrameType::kResult, static_cast<uint16_t>(key >> 32), rank,
               static_cast<uint32_t>(key), all.data(), all.size());
    }
  }
  g.blocks.assign(1, std::move(all));  // blocks[0] holds the result from now on
  g.sent = true;
}

// ------------------------------------------------------------------------------- member

void SocketState::member_connect() {
  if (up && !connecting) return;
  if (!up) {
    // Connect once: a connection lost after the server's welcome is a failure, not a retry.
    if (welcomed || is_error(fatal) || now_ns() < retry_at_ns) return;
    int fd = -1;
    bool done = false;
    Status s = connect_start(unique_id_address(id), &fd, &done);
    if (is_error(s)) {
      connect_failed(last_error(), errno == ECONNREFUSED);
      return;
    }
    up = std::make_unique<Conn>(fd, unique_id_address(id).text());
    connecting = !done;
  }
  if (connecting) {
    std::string why;
    int c = connect_check(up->fd(), &why);
    if (c == 0) return;
    if (c < 0) {
      up.reset();
      connect_failed("connect to " + unique_id_address(id).text() + ": " + why,
                     why == strerror(ECONNREFUSED));
      return;
    }
    connecting = false;
  }
  HelloBody hello{};
  std::memcpy(hello.secret, id.secret, sizeof(hello.secret));
  hello.token = id.token;
  hello.rank = rank;
  hello.size = size;
  up->queue(FrameType::kHello, 0, rank, 0, &hello, sizeof(hello));
  for (auto &[key, block] : unsent_blocks) {
    up->queue(FrameType::kBlock, static_cast<uint16_t>(key >> 32), rank,
              static_cast<uint32_t>(key), block.data(), block.size());
  }
  unsent_blocks.clear();
}

void SocketState::connect_failed(const std::string &why, bool refused_now) {
  connect_why = why;
  refused = refused_now ? refused + 1 : 0;
  if (refused >= kRefusalsMeanGone) {
    // The listener exists from the id's making until its creator is done with the id.
    set_fatal(COHORT_ERR_INVALID_USAGE,
              "nothing listens at the address of " + describe_server() +
                  " (connection refused): its creator ended, already failed or finished this "
                  "creation, or the id is from another run");
    return;
  }
  retry_at_ns = now_ns() + retry_ns;
  retry_ns = std::min(retry_ns * 2, kRetryMaxNs);
}

void SocketState::member_read() {
  std::string why;
  bool open = up->receive(&why);
  Frame f;
  std::string bad;
  while (up && up->next_frame(&f, &bad)) member_frame(f);
  if (!bad.empty()) {
    why = "it " + bad;
    open = false;
  }
  if (!open && up) {
    up.reset();
    if (!welcomed) {
      set_fatal(COHORT_ERR_INVALID_USAGE,
                describe_server() + " closed the connection without accepting it (" + why +
                    "): the id is stale or not this job's, or its creator ended");
    } else {
      set_fatal(COHORT_ERR_SYSTEM, "lost the connection to " + describe_server() + ": " + why +
                                       " (it exited, aborted or gave up)");
    }
  }
}

void SocketState::member_frame(const Frame &f) {
  const uint64_t key = key_of(f.header.channel, f.header.seq);
  switch (f.type()) {
    case FrameType::kWelcome:
      welcomed = true;
      server_rank = f.header.from;
      break;
    case FrameType::kResult: results[key] = f.body; break;
    case FrameType::kStatus: arrived[key] = f.body; break;
    case FrameType::kNotice: notices[f.header.channel].push_back(Notice{f.header.from, f.body}); break;
    case FrameType::kError:  // the server's status rides in the sequence word
      set_fatal(is_error(static_cast<Status>(static_cast<int32_t>(f.header.seq)))
                    ? static_cast<Status>(static_cast<int32_t>(f.header.seq))
                    : COHORT_ERR_INTERNAL,
                describe_server() + " ended the team's creation: " +
                    std::string(f.body.begin(), f.body.end()));
      break;
    default:
      COHORT_LOG_WARN(OOB, "socket OOB: the server sent an unexpected frame (type %u), ignored",
                      f.header.type);
  }
}

// ------------------------------------------------------------------------------ request

namespace {

Status SocketRequest::test() {
  if (done_) return COHORT_SUCCESS;
  std::lock_guard<std::mutex> lock(state_->mutex);
  Status s = state_->pump();
  if (is_error(s)) return fail(s, state_->fatal_why);
  if (state_->server) {
    Gather &g = state_->gather(key_);
    if (!g.sent) return COHORT_IN_PROGRESS;
    for (auto &m : state_->members) {
      if (m && m->writing()) return COHORT_IN_PROGRESS;  // every member gets the result first
    }
    result_ = std::move(g.blocks[0]);
    state_->gathers.erase(key_);
  } else {
    auto it = state_->results.find(key_);
    if (it == state_->results.end()) return COHORT_IN_PROGRESS;
    if (it->second.size() != len_ * state_->size) {
      return failf(COHORT_ERR_INTERNAL, "socket OOB: a result of %zu bytes, expected %zu",
                   it->second.size(), len_ * state_->size);
    }
    result_ = std::move(it->second);
    state_->results.erase(it);
    state_->arrived.erase(key_);
  }
  done_ = true;
  return COHORT_SUCCESS;
}

std::vector<int> SocketRequest::absent(bool *known) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::vector<int> out;
  *known = true;
  if (state_->server) {
    auto it = state_->gathers.find(key_);
    for (int r = 0; r < state_->size; ++r) {
      if (it == state_->gathers.end() || !it->second.have[r]) out.push_back(r);
    }
    return out;
  }
  if (!state_->welcomed) {
    *known = false;
    return out;
  }
  auto it = state_->arrived.find(key_);
  if (it == state_->arrived.end()) return {state_->server_rank};  // the server is not here yet
  for (int r = 0; r < state_->size; ++r) {
    if ((it->second[r / 8] & (1 << (r % 8))) == 0) out.push_back(r);
  }
  return out;
}

std::string SocketRequest::absence_note() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->server || state_->welcomed) return "";
  std::string note = state_->describe_server() + " has not accepted this rank's connection";
  if (!state_->connect_why.empty()) note += " (last attempt: " + state_->connect_why + ")";
  return note + ": it has not started team creation, ended, or the id is stale";
}

}  // namespace

// ------------------------------------------------------------------------------ the OOB

Status SocketOob::create(const cohort_unique_id_t &id, int size, int rank,
                         std::unique_ptr<SocketOob> *out) {
  auto state = std::make_unique<SocketState>();
  Status s = unique_id_parse(id, &state->id);
  if (is_error(s)) return s;
  if (size < 1 || size > (1 << 24)) {
    return failf(COHORT_ERR_INVALID_ARG, "size=%d: a team has 1 to %d ranks", size, 1 << 24);
  }
  if (rank < 0 || rank >= size) {
    return failf(COHORT_ERR_INVALID_ARG, "rank=%d is not in 0..%d (size %d)", rank, size - 1,
                 size);
  }
  state->size = size;
  state->rank = rank;
  state->server = unique_id_claim(state->id.token);
  if (state->server) {
    state->server_rank = rank;
    state->members.resize(size);
    state->gone.resize(size);
    if (size == 1) unique_id_release(state->id.token);
  }
  COHORT_LOG_INFO(OOB, "socket OOB: rank %d of %d %s %s", rank, size,
                  state->server ? "serves the id at" : "joins the id of",
                  unique_id_describe(state->id).c_str());
  out->reset(new SocketOob(std::move(state)));
  return COHORT_SUCCESS;
}

SocketOob::SocketOob(std::unique_ptr<SocketState> state) : state_(std::move(state)) {}
SocketOob::~SocketOob() = default;
int SocketOob::size() const { return state_->size; }
int SocketOob::rank() const { return state_->rank; }

Status SocketOob::allgather(const void *data, size_t len, int channel,
                            std::unique_ptr<OobRequest> *request) {
  SocketState &st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  const uint64_t key = key_of(channel, st.next_seq[channel]++);
  if (st.server) {
    Gather &g = st.gather(key);
    g.blocks[st.rank].assign(static_cast<const char *>(data), static_cast<const char *>(data) + len);
    g.have[st.rank] = 1;
    --g.missing;
    g.posted = true;
  } else if (st.up && !st.connecting) {
    st.up->queue(FrameType::kBlock, static_cast<uint16_t>(channel), st.rank,
                 static_cast<uint32_t>(key), data, len);
  } else {
    st.unsent_blocks.emplace_back(key, std::vector<char>(static_cast<const char *>(data),
                                                         static_cast<const char *>(data) + len));
  }
  *request = std::make_unique<SocketRequest>(state_.get(), key, len);
  st.pump();
  return COHORT_SUCCESS;
}

void SocketOob::notify_all(const void *data, size_t len, int channel) {
  SocketState &st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.server) {
    for (auto &m : st.members) {
      if (m) m->queue(FrameType::kNotice, static_cast<uint16_t>(channel), st.rank, 0, data, len);
    }
  } else if (st.up && !st.connecting) {
    st.up->queue(FrameType::kNotice, static_cast<uint16_t>(channel), st.rank, 0, data, len);
  }
  st.flush_all();
}

bool SocketOob::poll_notice(void *data, size_t len, int channel, int *from) {
  SocketState &st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  st.pump();
  auto it = st.notices.find(channel);
  if (it == st.notices.end() || it->second.empty()) return false;
  Notice n = std::move(it->second.front());
  it->second.pop_front();
  std::memset(data, 0, len);
  std::memcpy(data, n.data.data(), std::min(len, n.data.size()));
  *from = n.from;
  return true;
}

}  // namespace cohort
