// Unique ids and the process's one rendezvous listener, for teams created without MPI (as
// NCCL's ncclGetUniqueId / ncclCommInitRank).  No thread: the listener's backlog holds
// connections until the id's creator drives its team creation, which accepts them.
//
// An id carries the listener's address, a token naming the id, and a 128-bit secret.  A
// connection that does not present the secret of an id this process serves is dropped and
// logged, so a port scanner or a stray job can neither join nor stall a creation.  An id that
// is never used expires after COHORT_INIT_TIMEOUT; once no id is live the listener closes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort.h"
#include "core/socket_io.h"
#include "core/status.h"

namespace cohort {

// The id's bytes (cohort_unique_id_t.internal).
struct UniqueIdWire {
  uint32_t magic;
  uint16_t version;
  uint16_t family;  // AF_INET or AF_INET6
  uint16_t port;    // network byte order
  uint16_t reserved;
  uint32_t scope_id;
  uint8_t address[16];
  uint8_t secret[16];
  uint64_t token;
  int64_t creator_pid;
  char creator_host[48];
};
static_assert(sizeof(UniqueIdWire) <= sizeof(cohort_unique_id_t));

inline constexpr uint32_t kUniqueIdMagic = 0x43484944u;  // "CHID"
inline constexpr uint16_t kUniqueIdVersion = 1;

// What a member says first.
struct HelloBody {
  uint8_t secret[16];
  uint64_t token;
  int32_t rank;
  int32_t size;
};

// A connection that presented a valid secret and token, waiting for the id's creator.
struct Arrival {
  std::unique_ptr<Conn> conn;
  HelloBody hello;
};

// Makes a fresh id served by this process (opens the listener on first use).
Status unique_id_create(cohort_unique_id_t *id);
// Reads and checks an id; the error names what is wrong.
Status unique_id_parse(const cohort_unique_id_t &id, UniqueIdWire *out);
// The listener's address and the creator, for messages: "host pid 123 at 10.0.0.1:41234".
std::string unique_id_describe(const UniqueIdWire &id);
SocketAddress unique_id_address(const UniqueIdWire &id);

// The first caller in the creating process becomes the id's server: true once, false for
// later callers and in other processes (they connect to the address as members).
bool unique_id_claim(uint64_t token);
// Accepts what the listener holds, reads hellos, drops bad connections, and hands over those
// that arrived for `token`.
std::vector<Arrival> unique_id_take_arrivals(uint64_t token);
// The server needs no more connections for `token`; the listener closes when no id is live.
void unique_id_release(uint64_t token);
// Whether this process's listener is open (tests: an unused id does not keep it).
bool unique_id_listening();

}  // namespace cohort
