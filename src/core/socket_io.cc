#include "core/socket_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstring>

#include "core/params.h"

namespace cohort {
namespace {

std::string errno_text(int err) { return std::string(strerror(err)); }

// One entry of a NCCL_SOCKET_IFNAME-style list against a name: a prefix, or the exact name
// when the list began with '='.
bool entry_matches(const std::string &entry, const std::string &name, bool exact) {
  if (entry.empty()) return false;
  return exact ? name == entry : name.compare(0, entry.size(), entry) == 0;
}

bool usable_by_default(const std::string &name, unsigned flags) {
  if ((flags & IFF_UP) == 0 || (flags & IFF_LOOPBACK) != 0) return false;
  return name.rfind("docker", 0) != 0 && name.rfind("virbr", 0) != 0 && name.rfind("veth", 0) != 0;
}

SocketAddress from_ifaddr(const ifaddrs *ifa) {
  SocketAddress out;
  out.length = ifa->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  std::memcpy(&out.storage, ifa->ifa_addr, out.length);
  if (ifa->ifa_addr->sa_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6 *>(&out.storage)->sin6_port = 0;
  } else {
    reinterpret_cast<sockaddr_in *>(&out.storage)->sin_port = 0;
  }
  return out;
}

// The filter in effect and where it came from, empty when none is set.
std::string interface_filter(const char **source) {
  const ParamSpec *spec = param_find("SOCKET_IFNAME");
  bool from_env = false;
  std::string text = spec != nullptr ? param_text(*spec, &from_env) : std::string();
  *source = "COHORT_SOCKET_IFNAME";
  if (from_env && !text.empty()) return text;
  const char *nccl = getenv("NCCL_SOCKET_IFNAME");
  *source = "NCCL_SOCKET_IFNAME";
  return nccl != nullptr ? std::string(nccl) : std::string();
}

}  // namespace

std::string SocketAddress::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (storage.ss_family == AF_INET) {
    const auto *in = reinterpret_cast<const sockaddr_in *>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&storage);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
  port = ntohs(in6->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

Conn::~Conn() {
  if (fd_ >= 0) close(fd_);
}

bool Conn::receive(std::string *why) {
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.insert(in_.end(), buf, buf + n);
      if (static_cast<size_t>(n) < sizeof(buf)) return true;
      continue;
    }
    if (n == 0) {
      *why = "the connection was closed";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    *why = "receive failed: " + errno_text(errno);
    return false;
  }
}

bool Conn::next_frame(Frame *out, std::string *bad) {
  if (in_.size() < sizeof(FrameHeader)) {
    // A partial header can already show garbage: check the magic's bytes that came.
    uint32_t magic = kFrameMagic;
    if (!in_.empty() && std::memcmp(in_.data(), &magic, std::min<size_t>(in_.size(), 4)) != 0) {
      *bad = "sent bytes that are not a Cohort frame";
    }
    return false;
  }
  FrameHeader header;
  std::memcpy(&header, in_.data(), sizeof(header));
  if (header.magic != kFrameMagic) {
    *bad = "sent bytes that are not a Cohort frame";
    return false;
  }
  if (header.len > kMaxFrameBody || header.type < 1 || header.type > 7) {
    *bad = "sent a malformed frame (type " + std::to_string(header.type) + ", " +
           std::to_string(header.len) + " bytes)";
    return false;
  }
  if (in_.size() < sizeof(header) + header.len) return false;
  out->header = header;
  out->body.assign(in_.begin() + sizeof(header), in_.begin() + sizeof(header) + header.len);
  in_.erase(in_.begin(), in_.begin() + sizeof(header) + header.len);
  return true;
}

bool Conn::peek_header(FrameHeader *out) const {
  if (in_.size() < sizeof(FrameHeader)) return false;
  std::memcpy(out, in_.data(), sizeof(*out));
  return true;
}

void Conn::queue(FrameType type, uint16_t channel, int32_t from, uint32_t seq, const void *body,
                 size_t len) {
  if (out_offset_ == out_.size()) {
    out_.clear();
    out_offset_ = 0;
  }
  FrameHeader header{kFrameMagic, static_cast<uint16_t>(type), channel, from, seq, len};
  const char *h = reinterpret_cast<const char *>(&header);
  out_.insert(out_.end(), h, h + sizeof(header));
  if (len > 0) out_.insert(out_.end(), static_cast<const char *>(body),
                           static_cast<const char *>(body) + len);
}

bool Conn::flush(std::string *why) {
  while (out_offset_ < out_.size()) {
    ssize_t n = send(fd_, out_.data() + out_offset_, out_.size() - out_offset_, MSG_NOSIGNAL);
    if (n > 0) {
      out_offset_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    *why = "send failed: " + errno_text(errno);
    return false;
  }
  return true;
}

bool interface_matches(const std::string &filter, const std::string &name) {
  size_t pos = 0;
  bool exclude = false;
  bool exact = false;
  if (pos < filter.size() && filter[pos] == '^') exclude = true, ++pos;
  if (pos < filter.size() && filter[pos] == '=') exact = true, ++pos;
  bool listed = false;
  while (pos <= filter.size()) {
    size_t comma = filter.find(',', pos);
    if (comma == std::string::npos) comma = filter.size();
    listed = listed || entry_matches(filter.substr(pos, comma - pos), name, exact);
    pos = comma + 1;
  }
  return exclude ? !listed : listed;
}

Status choose_interface(SocketAddress *out, std::string *ifname) {
  const char *source = nullptr;
  const std::string filter = interface_filter(&source);
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) {
    return failf(COHORT_ERR_SYSTEM, "getifaddrs: %s", strerror(errno));
  }
  const ifaddrs *best = nullptr;
  const ifaddrs *loopback = nullptr;
  for (int family : {AF_INET, AF_INET6}) {
    for (const ifaddrs *ifa = list; ifa != nullptr && best == nullptr; ifa = ifa->ifa_next) {
      if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != family) continue;
      const std::string name = ifa->ifa_name;
      if (!filter.empty()) {
        if ((ifa->ifa_flags & IFF_UP) != 0 && interface_matches(filter, name)) best = ifa;
        continue;
      }
      if (usable_by_default(name, ifa->ifa_flags)) best = ifa;
      if (loopback == nullptr && (ifa->ifa_flags & IFF_LOOPBACK) != 0) loopback = ifa;
    }
  }
  if (best == nullptr) best = filter.empty() ? loopback : nullptr;
  Status s = COHORT_SUCCESS;
  if (best != nullptr) {
    *out = from_ifaddr(best);
    *ifname = best->ifa_name;
  } else if (!filter.empty()) {
    s = failf(COHORT_ERR_INVALID_ARG, "%s=%s matches no interface that is up", source,
              filter.c_str());
  } else {
    s = fail(COHORT_ERR_SYSTEM, "this machine has no network interface that is up");
  }
  freeifaddrs(list);
  return s;
}

void socket_setup(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Status listen_on(const SocketAddress &where, int *fd, SocketAddress *bound) {
  int s = socket(where.storage.ss_family, SOCK_STREAM, 0);
  if (s < 0) return failf(COHORT_ERR_SYSTEM, "socket: %s", strerror(errno));
  socket_setup(s);
  if (bind(s, reinterpret_cast<const sockaddr *>(&where.storage), where.length) != 0 ||
      listen(s, SOMAXCONN) != 0) {
    int err = errno;
    close(s);
    return failf(COHORT_ERR_SYSTEM, "cannot listen on %s: %s", where.text().c_str(),
                 strerror(err));
  }
  bound->length = sizeof(bound->storage);
  getsockname(s, reinterpret_cast<sockaddr *>(&bound->storage), &bound->length);
  *fd = s;
  return COHORT_SUCCESS;
}

Status connect_start(const SocketAddress &to, int *fd, bool *done) {
  int s = socket(to.storage.ss_family, SOCK_STREAM, 0);
  if (s < 0) return failf(COHORT_ERR_SYSTEM, "socket: %s", strerror(errno));
  socket_setup(s);
  *done = false;
  if (connect(s, reinterpret_cast<const sockaddr *>(&to.storage), to.length) == 0) {
    *done = true;
  } else if (errno != EINPROGRESS && errno != EINTR) {
    int err = errno;
    close(s);
    Status failed = failf(COHORT_ERR_SYSTEM, "connect to %s: %s", to.text().c_str(), strerror(err));
    errno = err;  // the caller tells a refusal from other failures
    return failed;
  }
  *fd = s;
  return COHORT_SUCCESS;
}

int connect_check(int fd, std::string *why) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    *why = errno_text(err);
    return -1;
  }
  sockaddr_storage peer;
  socklen_t peer_len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peer_len) == 0) return 1;
  return errno == ENOTCONN ? 0 : -1;
}

std::string peer_text(int fd) {
  SocketAddress peer;
  peer.length = sizeof(peer.storage);
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer.storage), &peer.length) != 0) {
    return "an unknown peer";
  }
  return peer.text();
}

}  // namespace cohort
