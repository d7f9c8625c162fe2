#include "core/rendezvous.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "core/clock.h"
#include "core/log.h"
#include "core/params.h"

namespace cohort {
namespace {

// A connection that has not said which id it is for gets this long to say it.
constexpr int64_t kHelloWindowNs = 10'000'000'000;
// At most this many such connections are held at once; more are refused (a flood).
constexpr size_t kMaxGreetings = 4096;

struct IdRecord {
  uint8_t secret[16];
  int64_t expires_ns = 0;
  bool claimed = false;
  std::vector<Arrival> arrivals;
};

struct Greeting {
  std::unique_ptr<Conn> conn;
  int64_t deadline_ns;
};

struct Listener {
  std::mutex mutex;
  int fd = -1;
  SocketAddress bound;
  std::string ifname;
  std::map<uint64_t, IdRecord> ids;
  std::vector<Greeting> greetings;
};

Listener &listener() {
  static Listener instance;
  return instance;
}

bool same_secret(const uint8_t *a, const uint8_t *b) {
  uint8_t diff = 0;  // constant time: a wrong guess learns nothing from the timing
  for (int i = 0; i < 16; ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

Status random_bytes(void *out, size_t len) {
  auto *p = static_cast<char *>(out);
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failf(COHORT_ERR_SYSTEM, "getrandom: %s", strerror(errno));
    p += n;
    len -= static_cast<size_t>(n);
  }
  return COHORT_SUCCESS;
}

void close_locked(Listener &l) {
  if (l.fd >= 0) {
    close(l.fd);
    COHORT_LOG_INFO(OOB, "rendezvous listener on %s closed: no id is live",
                    l.bound.text().c_str());
  }
  l.fd = -1;
  l.greetings.clear();
}

// Drops ids never claimed whose time ran out; closes the listener once none is left.
void expire_locked(Listener &l) {
  const int64_t now = now_ns();
  for (auto it = l.ids.begin(); it != l.ids.end();) {
    if (!it->second.claimed && it->second.expires_ns < now) {
      COHORT_LOG_WARN(OOB, "a unique id made by this process expired unused (COHORT_INIT_TIMEOUT)");
      it = l.ids.erase(it);
    } else {
      ++it;
    }
  }
  if (l.ids.empty()) close_locked(l);
}

Status open_locked(Listener &l) {
  if (l.fd >= 0) return COHORT_SUCCESS;
  SocketAddress where;
  Status s = choose_interface(&where, &l.ifname);
  if (is_error(s)) return s;
  s = listen_on(where, &l.fd, &l.bound);
  if (is_error(s)) return s;
  COHORT_LOG_INFO(OOB, "rendezvous listener on %s (%s)", l.bound.text().c_str(),
                  l.ifname.c_str());
  return COHORT_SUCCESS;
}

void drop(const Greeting &g, const std::string &why) {
  COHORT_LOG_WARN(OOB, "dropped a rendezvous connection from %s: %s", g.conn->peer().c_str(),
                  why.c_str());
}

// A complete first frame: true when it settled the greeting (handed over or dropped).
bool settle(Listener &l, Greeting &g, const Frame &frame) {
  if (frame.type() != FrameType::kHello || frame.body.size() != sizeof(HelloBody)) {
    drop(g, "its first frame is not a hello");
    return true;
  }
  HelloBody hello;
  std::memcpy(&hello, frame.body.data(), sizeof(hello));
  auto it = l.ids.find(hello.token);
  if (it == l.ids.end()) {
    drop(g, "it presented an id this process does not serve (stale, or made elsewhere)");
    return true;
  }
  if (!same_secret(hello.secret, it->second.secret)) {
    drop(g, "it presented a wrong secret");
    return true;
  }
  it->second.arrivals.push_back(Arrival{std::move(g.conn), hello});
  return true;
}

void accept_locked(Listener &l) {
  for (;;) {
    int fd = accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: nothing more waiting (other errors: try at the next call)
    socket_setup(fd);
    auto conn = std::make_unique<Conn>(fd, peer_text(fd));
    if (l.greetings.size() >= kMaxGreetings) {
      COHORT_LOG_WARN(OOB, "refused a rendezvous connection from %s: %zu are already waiting",
                      conn->peer().c_str(), l.greetings.size());
      continue;
    }
    l.greetings.push_back(Greeting{std::move(conn), now_ns() + kHelloWindowNs});
  }
}

void greet_locked(Listener &l) {
  const int64_t now = now_ns();
  for (size_t i = 0; i < l.greetings.size();) {
    Greeting &g = l.greetings[i];
    std::string why;
    Frame frame;
    bool settled = false;
    FrameHeader header;
    if (!g.conn->receive(&why)) {
      drop(g, why + " before it said which id it is for");
      settled = true;
    } else if (g.conn->peek_header(&header) && header.magic == kFrameMagic &&
               (header.type != static_cast<uint16_t>(FrameType::kHello) ||
                header.len != sizeof(HelloBody))) {
      // Nothing but a hello is read from a stranger: no large body is ever buffered for one.
      drop(g, "its first frame is not a hello");
      settled = true;
    } else if (g.conn->next_frame(&frame, &why)) {
      settled = settle(l, g, frame);
    } else if (!why.empty()) {
      drop(g, "it " + why);
      settled = true;
    } else if (now > g.deadline_ns) {
      drop(g, "it sent no hello within 10 s");
      settled = true;
    }
    if (settled) {
      l.greetings.erase(l.greetings.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

}  // namespace

Status unique_id_create(cohort_unique_id_t *id) {
  if (id == nullptr) return fail(COHORT_ERR_INVALID_ARG, "id is NULL");
  double ttl_s = 0;
  Status s = param_double("INIT_TIMEOUT", &ttl_s);
  if (is_error(s)) return s;
  UniqueIdWire wire{};
  IdRecord record;
  if (s = random_bytes(wire.secret, sizeof(wire.secret)); is_error(s)) return s;
  if (s = random_bytes(&wire.token, sizeof(wire.token)); is_error(s)) return s;
  std::memcpy(record.secret, wire.secret, sizeof(record.secret));
  record.expires_ns = deadline_after(ttl_s);
  Listener &l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  expire_locked(l);
  if (s = open_locked(l); is_error(s)) return s;
  wire.magic = kUniqueIdMagic;
  wire.version = kUniqueIdVersion;
  wire.family = l.bound.storage.ss_family;
  if (wire.family == AF_INET) {
    const auto *in = reinterpret_cast<const sockaddr_in *>(&l.bound.storage);
    wire.port = in->sin_port;
    std::memcpy(wire.address, &in->sin_addr, 4);
  } else {
    const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&l.bound.storage);
    wire.port = in6->sin6_port;
    wire.scope_id = in6->sin6_scope_id;
    std::memcpy(wire.address, &in6->sin6_addr, 16);
  }
  wire.creator_pid = getpid();
  gethostname(wire.creator_host, sizeof(wire.creator_host) - 1);
  l.ids.emplace(wire.token, std::move(record));
  std::memset(id, 0, sizeof(*id));
  std::memcpy(id->internal, &wire, sizeof(wire));
  return COHORT_SUCCESS;
}

Status unique_id_parse(const cohort_unique_id_t &id, UniqueIdWire *out) {
  std::memcpy(out, id.internal, sizeof(*out));
  if (out->magic != kUniqueIdMagic) {
    return fail(COHORT_ERR_INVALID_ARG,
                "the unique id is not one Cohort made (its magic word is wrong): pass every rank "
                "the bytes the creator's cohort_unique_id_create (ncclGetUniqueId) wrote");
  }
  if (out->version != kUniqueIdVersion) {
    return failf(COHORT_ERR_INVALID_ARG,
                 "the unique id has format version %u; this Cohort reads version %u (mixed "
                 "Cohort builds in one job?)",
                 out->version, kUniqueIdVersion);
  }
  if (out->family != AF_INET && out->family != AF_INET6) {
    return failf(COHORT_ERR_INVALID_ARG, "the unique id holds an unknown address family %u",
                 out->family);
  }
  out->creator_host[sizeof(out->creator_host) - 1] = '\0';
  return COHORT_SUCCESS;
}

SocketAddress unique_id_address(const UniqueIdWire &id) {
  SocketAddress a;
  if (id.family == AF_INET) {
    auto *in = reinterpret_cast<sockaddr_in *>(&a.storage);
    in->sin_family = AF_INET;
    in->sin_port = id.port;
    std::memcpy(&in->sin_addr, id.address, 4);
    a.length = sizeof(sockaddr_in);
  } else {
    auto *in6 = reinterpret_cast<sockaddr_in6 *>(&a.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = id.port;
    in6->sin6_scope_id = id.scope_id;
    std::memcpy(&in6->sin6_addr, id.address, 16);
    a.length = sizeof(sockaddr_in6);
  }
  return a;
}

std::string unique_id_describe(const UniqueIdWire &id) {
  return std::string(id.creator_host) + " pid " + std::to_string(id.creator_pid) + " at " +
         unique_id_address(id).text();
}

bool unique_id_claim(uint64_t token) {
  Listener &l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  auto it = l.ids.find(token);
  if (it == l.ids.end() || it->second.claimed) return false;
  it->second.claimed = true;
  return true;
}

std::vector<Arrival> unique_id_take_arrivals(uint64_t token) {
  Listener &l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.fd >= 0) {
    accept_locked(l);
    greet_locked(l);
  }
  auto it = l.ids.find(token);
  if (it == l.ids.end()) return {};
  std::vector<Arrival> out = std::move(it->second.arrivals);
  it->second.arrivals.clear();
  return out;
}

void unique_id_release(uint64_t token) {
  Listener &l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.ids.erase(token);
  expire_locked(l);
}

bool unique_id_listening() {
  Listener &l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  expire_locked(l);
  return l.fd >= 0;
}

}  // namespace cohort
