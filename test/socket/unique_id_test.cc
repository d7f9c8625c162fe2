// Teams created from a unique id, without MPI: this program forks its ranks itself (no mpirun,
// no MPI_Init anywhere) and hands them the id through a pipe, as a launcher or PyTorch's store
// would.  One scenario per run; exit status 0 when every rank saw what the scenario expects.
//
//   unique_id_test <scenario> <ranks>
//
// Scenarios: basic, missing, missing-creator, intruders, wrong-size, duplicate, abort, bad-args.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "cohort.h"
#include "forked_ranks.h"

namespace {

using forked::IdPipe;

using forked::send_id;

cohort_unique_id_t receive_id(const IdPipe &p) {
  return forked::receive_id<cohort_unique_id_t>(p);
}

cohort_team_config_t config_with_timeout(double seconds) {
  cohort_team_config_t config = COHORT_TEAM_CONFIG_INITIALIZER;
  config.init_timeout = seconds;
  config.cuda_device = COHORT_DEVICE_NONE;
  return config;
}

bool contains(const char *text, const std::string &what) {
  return strstr(text, what.c_str()) != nullptr;
}

// A sum every rank can check: element i of rank r holds (r + 1) * (i + 1).
void check_allreduce(cohort_team_t team, int size) {
  const size_t count = 4099;
  std::vector<int64_t> in(count), out(count, -1);
  int rank = -1;
  cohort_team_rank(team, &rank);
  for (size_t i = 0; i < count; ++i) in[i] = (rank + 1) * static_cast<int64_t>(i + 1);
  cohort_status_t s =
      cohort_allreduce(team, in.data(), out.data(), count, COHORT_INT64, COHORT_SUM);
  CHECK(s == COHORT_SUCCESS, "allreduce: %s (%s)", cohort_status_string(s), cohort_last_error());
  const int64_t ranks_sum = static_cast<int64_t>(size) * (size + 1) / 2;
  for (size_t i = 0; i < count && s == COHORT_SUCCESS; ++i) {
    if (out[i] != ranks_sum * static_cast<int64_t>(i + 1)) {
      CHECK(false, "allreduce element %zu: %lld, expected %lld", i,
            static_cast<long long>(out[i]), static_cast<long long>(ranks_sum * (i + 1)));
      break;
    }
  }
}

// Rank r of a team of `size` made from the id that `creator` makes; the others receive it.
// `readers`: the processes the id goes to (default: the size - 1 others).
cohort_status_t join(const IdPipe &p, int creator, int size, int rank, double timeout,
                     cohort_team_t *team, int readers = -1) {
  cohort_unique_id_t id;
  if (rank == creator) {
    cohort_status_t s = cohort_unique_id_create(&id);
    CHECK(s == COHORT_SUCCESS, "cohort_unique_id_create: %s", cohort_last_error());
    send_id(p, id, readers >= 0 ? readers : size - 1);
  } else {
    id = receive_id(p);
  }
  cohort_team_config_t config = config_with_timeout(timeout);
  return cohort_team_create_unique_id(&id, size, rank, &config, team);
}

void scenario_basic(const IdPipe &p, const IdPipe &p2, int size, int rank) {
  cohort_team_t team = nullptr;
  cohort_status_t s = join(p, 0, size, rank, 60, &team);
  CHECK(s == COHORT_SUCCESS, "create: %s (%s)", cohort_status_string(s), cohort_last_error());
  if (s != COHORT_SUCCESS) return;
  int got_size = 0, got_rank = -1;
  cohort_team_size(team, &got_size);
  cohort_team_rank(team, &got_rank);
  CHECK(got_size == size && got_rank == rank, "size %d rank %d", got_size, got_rank);
  check_allreduce(team, size);
  // A second team, made from an id that the last rank creates, while the first still exists.
  cohort_team_t second = nullptr;
  s = join(p2, size - 1, size, rank, 60, &second);
  CHECK(s == COHORT_SUCCESS, "second create: %s (%s)", cohort_status_string(s),
        cohort_last_error());
  if (s == COHORT_SUCCESS) {
    check_allreduce(second, size);
    cohort_team_destroy(second);
  }
  check_allreduce(team, size);
  cohort_team_destroy(team);
}

// The last rank never calls: every other rank fails within the timeout, naming it.
void scenario_missing(const IdPipe &p, int size, int rank) {
  if (rank == size - 1) {
    receive_id(p);
    sleep(4);
    return;
  }
  cohort_team_t team = nullptr;
  cohort_status_t s = join(p, 0, size, rank, 1.5, &team);
  const char *why = cohort_last_error();
  CHECK(s == COHORT_ERR_TIMEOUT, "create: %s, expected COHORT_ERR_TIMEOUT (%s)",
        cohort_status_string(s), why);
  CHECK(contains(why, "rank " + std::to_string(size - 1)), "the error does not name rank %d: %s",
        size - 1, why);
  if (team != nullptr) cohort_team_destroy(team);
}

// The id's creator makes it and hands it out, then never creates the team.
void scenario_missing_creator(const IdPipe &p, int size, int rank) {
  if (rank == 0) {
    cohort_unique_id_t id;
    CHECK(cohort_unique_id_create(&id) == COHORT_SUCCESS, "%s", cohort_last_error());
    send_id(p, id, size - 1);
    sleep(4);
    return;
  }
  cohort_team_t team = nullptr;
  cohort_status_t s = join(p, 0, size, rank, 1.5, &team);
  const char *why = cohort_last_error();
  CHECK(s == COHORT_ERR_TIMEOUT, "create: %s, expected COHORT_ERR_TIMEOUT (%s)",
        cohort_status_string(s), why);
  CHECK(contains(why, "id's creator") && contains(why, "pid"),
        "the error does not name the id's creator: %s", why);
  if (team != nullptr) cohort_team_destroy(team);
}

// Connects to the id's address as a stray client would: raw bytes, or nothing at all.
int raw_connect(const cohort_unique_id_t &id) {
  // The id's layout (core/rendezvous.h): the test reads the address to play the intruder.
  uint16_t family, port;
  uint8_t address[16];
  std::memcpy(&family, id.internal + 6, 2);
  std::memcpy(&port, id.internal + 8, 2);
  std::memcpy(address, id.internal + 16, 16);
  sockaddr_storage to{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto *in = reinterpret_cast<sockaddr_in *>(&to);
    in->sin_family = AF_INET;
    in->sin_port = port;
    std::memcpy(&in->sin_addr, address, 4);
    len = sizeof(sockaddr_in);
  } else {
    auto *in6 = reinterpret_cast<sockaddr_in6 *>(&to);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = port;
    std::memcpy(&in6->sin6_addr, address, 16);
    len = sizeof(sockaddr_in6);
  }
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&to), len) != 0) {
    CHECK(false, "intruder: cannot connect to the id's address: %s", strerror(errno));
    return -1;
  }
  return fd;
}

// Rank `size` is not a member: it connects with garbage, with silence, and with the right
// token but a wrong secret; the real ranks still meet.
void scenario_intruders(const IdPipe &p, int size, int rank) {
  if (rank == size) {
    cohort_unique_id_t id = receive_id(p);
    int garbage = raw_connect(id);
    int silent = raw_connect(id);
    const char junk[] = "GET / HTTP/1.0\r\n\r\nand then some bytes that are not a frame";
    if (garbage >= 0) CHECK(write(garbage, junk, sizeof(junk)) > 0, "write garbage");
    // A frame header that announces a hello of 512 MiB, then nothing: refused at its header.
    int huge = raw_connect(id);
    const uint32_t header[6] = {0x43484652u, 1, 0, 0, 0u, 1u << 29};  // magic, hello, .., len
    if (huge >= 0) CHECK(write(huge, header, sizeof(header)) > 0, "write a huge header");
    cohort_unique_id_t forged = id;
    forged.internal[40] ^= 0x5a;  // a byte of the secret (bytes 32-47, core/rendezvous.h)
    cohort_team_config_t config = config_with_timeout(20);
    cohort_team_t team = nullptr;
    cohort_status_t s = cohort_team_create_unique_id(&forged, size, 1, &config, &team);
    const char *why = cohort_last_error();
    CHECK(s == COHORT_ERR_INVALID_USAGE, "forged secret: %s, expected COHORT_ERR_INVALID_USAGE (%s)",
          cohort_status_string(s), why);
    CHECK(contains(why, "without accepting"), "forged secret's error: %s", why);
    if (team != nullptr) cohort_team_destroy(team);
    sleep(1);
    if (garbage >= 0) close(garbage);
    if (silent >= 0) close(silent);
    if (huge >= 0) close(huge);
    return;
  }
  if (rank == 1) usleep(300000);  // the intruders come first
  cohort_team_t team = nullptr;
  cohort_status_t s = join(p, 0, size, rank, 30, &team, size);
  CHECK(s == COHORT_SUCCESS, "create with intruders about: %s (%s)", cohort_status_string(s),
        cohort_last_error());
  if (s == COHORT_SUCCESS) {
    check_allreduce(team, size);
    cohort_team_destroy(team);
  }
}

// Rank 1 is told the team has one rank more: every rank fails at once, and says why (a rank
// that comes after the creator gave up finds nothing listening, and says that).
void scenario_wrong_size(const IdPipe &p, int size, int rank) {
  cohort_team_t team = nullptr;
  cohort_status_t s = join(p, 0, rank == 1 ? size + 1 : size, rank, 30, &team);
  const char *why = cohort_last_error();
  CHECK(s == COHORT_ERR_INVALID_USAGE, "create: %s, expected COHORT_ERR_INVALID_USAGE (%s)",
        cohort_status_string(s), why);
  CHECK(contains(why, "was given a team of") || (rank > 1 && contains(why, "nothing listens")),
        "the error does not say why: %s", why);
  if (team != nullptr) cohort_team_destroy(team);
}

// Ranks 1 and 2 both join as rank 1.
void scenario_duplicate(const IdPipe &p, int size, int rank) {
  cohort_team_t team = nullptr;
  cohort_status_t s = join(p, 0, size, rank == 2 ? 1 : rank, 10, &team);
  const char *why = cohort_last_error();
  CHECK(s == COHORT_ERR_INVALID_USAGE, "create: %s, expected COHORT_ERR_INVALID_USAGE (%s)",
        cohort_status_string(s), why);
  CHECK(contains(why, "two processes joined as rank 1"), "the error does not say why: %s", why);
  if (team != nullptr) cohort_team_destroy(team);
}

// The last rank posts its creation and aborts it: the others fail at once, not at the timeout.
void scenario_abort(const IdPipe &p, int size, int rank) {
  cohort_unique_id_t id;
  if (rank == 0) {
    CHECK(cohort_unique_id_create(&id) == COHORT_SUCCESS, "%s", cohort_last_error());
    send_id(p, id, size - 1);
    sleep(1);  // the last rank connects, sends its check-in, and aborts before this one serves
  } else {
    id = receive_id(p);
  }
  cohort_team_config_t config = config_with_timeout(60);
  cohort_team_t team = nullptr;
  if (rank == size - 1) {
    CHECK(cohort_team_create_unique_id_post(&id, size, rank, &config, &team) == COHORT_SUCCESS,
          "post: %s", cohort_last_error());
    for (int i = 0; i < 100; ++i) {
      cohort_team_create_test(team);
      usleep(3000);
    }
    cohort_team_abort(team);
    cohort_team_destroy(team);
    return;
  }
  const double start = static_cast<double>(time(nullptr));
  cohort_status_t s = cohort_team_create_unique_id(&id, size, rank, &config, &team);
  const char *why = cohort_last_error();
  CHECK(s != COHORT_SUCCESS && s != COHORT_ERR_TIMEOUT, "create: %s (%s)", cohort_status_string(s),
        why);
  CHECK(static_cast<double>(time(nullptr)) - start < 30, "the failure took until the timeout");
  CHECK(contains(why, "rank " + std::to_string(size - 1)) || contains(why, "left") ||
            contains(why, "lost the connection"),
        "the error does not say who ended it: %s", why);
  if (team != nullptr) cohort_team_destroy(team);
}

void scenario_bad_args(int rank) {
  if (rank != 0) return;
  cohort_unique_id_t zero{};
  cohort_team_t team = nullptr;
  cohort_status_t s = cohort_team_create_unique_id(&zero, 2, 0, nullptr, &team);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "not one Cohort made"),
        "an id of zeros: %s (%s)", cohort_status_string(s), cohort_last_error());
  cohort_unique_id_t id;
  CHECK(cohort_unique_id_create(&id) == COHORT_SUCCESS, "%s", cohort_last_error());
  s = cohort_team_create_unique_id(&id, 2, 2, nullptr, &team);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "rank=2"),
        "rank 2 of 2: %s (%s)", cohort_status_string(s), cohort_last_error());
  s = cohort_team_create_unique_id(&id, 0, 0, nullptr, &team);
  CHECK(s == COHORT_ERR_INVALID_ARG && contains(cohort_last_error(), "size=0"),
        "size 0: %s (%s)", cohort_status_string(s), cohort_last_error());
  s = cohort_team_create_unique_id(nullptr, 1, 0, nullptr, &team);
  CHECK(s == COHORT_ERR_INVALID_ARG, "a NULL id: %s", cohort_status_string(s));
  s = cohort_unique_id_create(nullptr);
  CHECK(s == COHORT_ERR_INVALID_ARG, "a NULL id out: %s", cohort_status_string(s));
  // One rank alone: the id's creator is the whole team.
  cohort_team_config_t config = config_with_timeout(30);
  s = cohort_team_create_unique_id(&id, 1, 0, &config, &team);
  CHECK(s == COHORT_SUCCESS, "a team of one: %s (%s)", cohort_status_string(s),
        cohort_last_error());
  if (s == COHORT_SUCCESS) {
    check_allreduce(team, 1);
    cohort_team_destroy(team);
  }
}

int run_rank(const std::string &scenario, const IdPipe &p, const IdPipe &p2, int size, int rank) {
  forked::g_rank = rank;
  if (scenario == "basic") scenario_basic(p, p2, size, rank);
  else if (scenario == "missing") scenario_missing(p, size, rank);
  else if (scenario == "missing-creator") scenario_missing_creator(p, size, rank);
  else if (scenario == "intruders") scenario_intruders(p, size, rank);
  else if (scenario == "wrong-size") scenario_wrong_size(p, size, rank);
  else if (scenario == "duplicate") scenario_duplicate(p, size, rank);
  else if (scenario == "abort") scenario_abort(p, size, rank);
  else if (scenario == "bad-args") scenario_bad_args(rank);
  else {
    fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  }
  return forked::g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <scenario> <ranks>\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  const int size = atoi(argv[2]);
  // The intruders scenario has one process more than the team: the intruder.
  const int processes = size + (scenario == "intruders" ? 1 : 0);
  IdPipe p, p2;
  if (pipe(p.fds) != 0 || pipe(p2.fds) != 0) return 2;
  return forked::run_forked(scenario + ", " + std::to_string(size) + " ranks", processes, 120,
                            [&](int r) { return run_rank(scenario, p, p2, size, r); });
}
