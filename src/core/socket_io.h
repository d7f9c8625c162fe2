// Framed messages over nonblocking TCP sockets, for the socket OOB (oob_socket.h) and its
// rendezvous (rendezvous.h): a fixed header with a magic word, so that garbage from a stray
// client is recognised at its first bytes, and a bounded body.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace cohort {

enum class FrameType : uint16_t {
  kHello = 1,    // member -> creator: secret, token, rank, size
  kWelcome = 2,  // creator -> member: accepted; the creator's rank
  kBlock = 3,    // member -> creator: its block of an allgather
  kResult = 4,   // creator -> member: every rank's block
  kStatus = 5,   // creator -> member: which ranks' blocks arrived (a bitmap)
  kNotice = 6,   // either way: a notice, relayed by the creator to every other rank
  kError = 7,    // creator -> member: the team cannot be formed, and why (text)
};

struct FrameHeader {
  uint32_t magic;
  uint16_t type;
  uint16_t channel;
  int32_t from;
  uint32_t seq;
  uint64_t len;
};
static_assert(sizeof(FrameHeader) == 24);

inline constexpr uint32_t kFrameMagic = 0x43484652u;  // "CHFR"
// A body larger than this is taken for garbage (an allgather result is size x block).
inline constexpr uint64_t kMaxFrameBody = uint64_t{1} << 30;

struct Frame {
  FrameHeader header{};
  std::vector<char> body;
  FrameType type() const { return static_cast<FrameType>(header.type); }
};

// A socket address in the form the unique id carries (IPv4 or IPv6).
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string text() const;  // "10.0.0.1:41234", "[fe80::1%eth0]:41234"
};

// One connected socket: what was read and not yet framed, what is queued and not yet written.
class Conn {
 public:
  Conn(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~Conn();
  Conn(const Conn &) = delete;
  Conn &operator=(const Conn &) = delete;

  int fd() const { return fd_; }
  const std::string &peer() const { return peer_; }
  // Reads what the socket holds.  false on end of stream or an error, with *why.
  bool receive(std::string *why);
  // Takes the next complete frame.  false when none is complete; *bad is set (and the
  // connection should be dropped) when the bytes are not Cohort frames.
  bool next_frame(Frame *out, std::string *bad);
  // The next frame's header, once all of it came (false before).
  bool peek_header(FrameHeader *out) const;
  void queue(FrameType type, uint16_t channel, int32_t from, uint32_t seq, const void *body,
             size_t len);
  // Writes what the socket takes.  false on an error, with *why.
  bool flush(std::string *why);
  bool writing() const { return out_offset_ < out_.size(); }
  size_t unread() const { return in_.size(); }

 private:
  int fd_;
  std::string peer_;
  std::vector<char> in_;
  std::vector<char> out_;
  size_t out_offset_ = 0;
};

// The address of this process's rendezvous listener: the interface chosen as NCCL's users
// expect (COHORT_SOCKET_IFNAME, else NCCL_SOCKET_IFNAME: a comma list of name prefixes, '^'
// excludes them, '=' asks for exact names; without either the first interface that is up and
// not loopback or a container bridge, IPv4 first; loopback only when nothing else exists).
Status choose_interface(SocketAddress *out, std::string *ifname);
// Whether interface `name` passes a NCCL_SOCKET_IFNAME-style filter (pure; unit-tested).
bool interface_matches(const std::string &filter, const std::string &name);

// A nonblocking listening socket on `where` (port 0: an ephemeral one); *bound = the address
// with its port.
Status listen_on(const SocketAddress &where, int *fd, SocketAddress *bound);
// Starts a nonblocking connect.  *fd is the socket; *done is true if it connected at once.
// On failure errno holds the cause.
Status connect_start(const SocketAddress &to, int *fd, bool *done);
// 1: connected, 0: still connecting, -1: failed with *why.
int connect_check(int fd, std::string *why);
// The text of a connected peer's address.
std::string peer_text(int fd);
// Sets nonblocking and close-on-exec, and TCP_NODELAY on stream sockets.
void socket_setup(int fd);

}  // namespace cohort
