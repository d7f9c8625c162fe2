// Randomized send/recv groups, every byte received checked.  usage:
//   mpirun -np N p2p_random [--iters N] [--seed S] [--max-count C] [--per-node K]
//                           [--memory device] [--stream N] [--graph N]
// Every rank draws the same traffic for each case from one seeded generator: for each ordered
// pair of ranks (a rank and itself included) up to two messages, each of a random dtype and
// count.  Each rank posts its sends and receives in one group, interleaved in an order of its
// own (messages to or from one peer keep their order, a send to self comes before its
// receive), and checks every byte against the pattern its sender wrote; the bytes around each
// receive must stay untouched.  A few cases add an allreduce on the same team after the
// group, which must see the group's end.  --per-node K puts ranks on fake hosts of K ranks
// (UCX between).  --memory device runs on device memory (the CUDA driver's, real or the
// tests' fake one: test/ompi/fake_cuda.c) with the blocking calls; --stream N with the
// stream-ordered ones on N streams in turn (each case waits for its stream), every third case
// with its operations spread over all N streams (one group on several streams); --graph N
// captures each group on one stream into a CUDA graph and replays it N times, each replay's
// receives equal to the first's (the last checked).  First, a
// group mixing blocking and stream-ordered operations must be refused.  The process may not gain
// threads after the first group (the progress engine is one thread, however often it stops and
// starts polling). Prints "p2p_random: N groups on P ranks, M messages, B bad bytes, F failed
// calls, T s"; exits 1 on any bad byte or failed call.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cohort_mpi.h"
#include "cohort.hpp"
#include "cuda_driver_test.h"
#include "random_options.h"
#include "test_values.h"

namespace {

constexpr size_t kGuard = 32;  // bytes checked on each side of a receive
constexpr unsigned char kGuardByte = 0x5A;
constexpr size_t kAlign = 64;

using Options = mpi_test::RandomOptions;

struct Message {
  int from, to, index;  // index: among the messages from `from` to `to`
  cohort_dtype_t dtype;
  size_t count;
  size_t bytes() const { return count * elem_bytes(dtype); }
};

struct Op {
  bool send;
  const Message *m;
  size_t offset;  // in the rank's send or receive arena
};

// The byte `j` of a message: depends on everything that names it.
unsigned char pattern(long iter, const Message &m, size_t j) {
  uint64_t h = (static_cast<uint64_t>(iter) * 1000003u) ^ (static_cast<uint64_t>(m.from) << 40) ^
               (static_cast<uint64_t>(m.to) << 24) ^ (static_cast<uint64_t>(m.index) << 16);
  h = (h + j) * 0x9E3779B97F4A7C15ull;
  return static_cast<unsigned char>(h >> 56);
}

size_t draw_count(std::mt19937_64 &g, size_t max_count) {
  const unsigned bucket = g() % 100;
  const size_t hi = bucket < 50 ? 16 : bucket < 85 ? 1024 : bucket < 97 ? 16384 : max_count;
  return g() % (std::min(hi, max_count) + 1);
}

// The case's traffic, the same on every rank: sparser as the team grows.
std::vector<Message> draw_traffic(std::mt19937_64 &g, const Options &o, int size) {
  std::vector<Message> all;
  for (int from = 0; from < size; ++from) {
    for (int to = 0; to < size; ++to) {
      const int n = g() % static_cast<unsigned>(size + 2) < 3 ? static_cast<int>(g() % 3) : 0;
      for (int i = 0; i < n; ++i) {
        const auto dtype = static_cast<cohort_dtype_t>(g() % COHORT_NUM_DTYPES);
        all.push_back(Message{from, to, i, dtype, draw_count(g, o.max_count)});
      }
    }
  }
  return all;
}

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// This rank's operations in an order of its own; arena offsets (receives between guards).
std::vector<Op> my_ops(const std::vector<Message> &all, int rank, std::mt19937_64 &mine,
                       size_t *send_bytes, size_t *recv_bytes) {
  std::vector<std::vector<Op>> queues;  // per peer and direction, in message order
  std::vector<int> queue_of;            // by 2 * peer + send
  auto queue = [&](bool send, int peer) -> std::vector<Op> & {
    const size_t key = 2 * static_cast<size_t>(peer) + send;
    if (key >= queue_of.size()) queue_of.resize(key + 1, -1);
    if (queue_of[key] < 0) {
      queue_of[key] = static_cast<int>(queues.size());
      queues.emplace_back();
    }
    return queues[queue_of[key]];
  };
  std::vector<Op> sends_to_self, recvs_from_self;
  *send_bytes = 0;
  *recv_bytes = kGuard;
  for (const Message &m : all) {
    if (m.from == rank) {
      Op op{true, &m, *send_bytes};
      *send_bytes = aligned(*send_bytes + m.bytes());
      (m.to == rank ? sends_to_self : queue(true, m.to)).push_back(op);
    }
    if (m.to == rank) {
      Op op{false, &m, *recv_bytes};
      *recv_bytes = aligned(*recv_bytes + m.bytes()) + kGuard;
      (m.from == rank ? recvs_from_self : queue(false, m.from)).push_back(op);
    }
  }
  // The queues' heads taken in a random order.
  std::vector<Op> order;
  size_t self_sent = 0, self_received = 0;
  for (;;) {
    std::vector<int> ready;
    for (size_t q = 0; q < queues.size(); ++q) {
      if (!queues[q].empty()) ready.push_back(static_cast<int>(q));
    }
    const bool can_send_self = self_sent < sends_to_self.size();
    const bool can_recv_self = self_received < recvs_from_self.size() && self_received < self_sent;
    const size_t choices = ready.size() + can_send_self + can_recv_self;
    if (choices == 0) break;
    size_t pick = mine() % choices;
    if (pick < ready.size()) {
      std::vector<Op> &q = queues[ready[pick]];
      order.push_back(q.front());
      q.erase(q.begin());
    } else if (pick == ready.size() && can_send_self) {
      order.push_back(sends_to_self[self_sent++]);
    } else {
      order.push_back(recvs_from_self[self_received++]);
    }
  }
  return order;
}

// Device arenas, grown as cases need, and the streams.
struct Device {
  mpi_test::CudaDriver driver;
  char *send = nullptr, *recv = nullptr;
  size_t send_cap = 0, recv_cap = 0;
  std::vector<void *> streams;
  long calls = 0;
  int graph = 0;  // --graph N
  bool grow(char **p, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return true;
    if (*p != nullptr) cohort_device_free(*p);
    *cap = std::max(bytes, 2 * *cap);
    return cohort_device_alloc(*cap, reinterpret_cast<void **>(p)) == COHORT_SUCCESS;
  }
};

cohort_status_t post(cohort_team_t team, const Op &op, char *send, char *recv, void *stream) {
  const Message &m = *op.m;
  if (op.send) {
    return stream ? cohort_send_stream(team, send + op.offset, m.count, m.dtype, m.to, stream)
                  : cohort_send(team, send + op.offset, m.count, m.dtype, m.to);
  }
  return stream ? cohort_recv_stream(team, recv + op.offset, m.count, m.dtype, m.from, stream)
                : cohort_recv(team, recv + op.offset, m.count, m.dtype, m.from);
}

// --graph: the group captured on `stream` (posted by `post_all` into the capture) replayed
// d.graph times on the receive arena as `initial` held it; the last replay's bytes in `recv`.
cohort_status_t replay_group(Device &d, void *stream, const std::vector<char> &initial,
                             std::vector<char> &recv, cohort_status_t posted) {
  void *graph = nullptr, *exec = nullptr;
  cohort_status_t s = posted;
  const int ended = d.driver.end_capture(stream, &graph);
  if (s == COHORT_SUCCESS && (ended != 0 || d.driver.instantiate(&exec, graph, 0) != 0)) {
    s = COHORT_ERR_CUDA;
  }
  if (graph != nullptr) d.driver.graph_destroy(graph);
  std::vector<char> first;
  for (int r = 0; r < d.graph && s == COHORT_SUCCESS; ++r) {
    s = cohort_memcpy(d.recv, initial.data(), initial.size());
    if (s == COHORT_SUCCESS && d.driver.launch(exec, stream) != 0) s = COHORT_ERR_CUDA;
    if (s == COHORT_SUCCESS && d.driver.stream_sync(stream) != 0) s = COHORT_ERR_CUDA;
    if (s == COHORT_SUCCESS) s = cohort_memcpy(recv.data(), d.recv, recv.size());
    if (s == COHORT_SUCCESS && r == 0) first = recv;
    if (s == COHORT_SUCCESS && recv != first) {
      std::printf("replay %d of a captured group received other bytes than the first\n", r);
      s = COHORT_ERR_INTERNAL;
    }
  }
  if (exec != nullptr) d.driver.exec_destroy(exec);
  return s;
}

// The group on host buffers, or on device copies of them (copied back after).
cohort_status_t run_group(cohort_team_t team, const std::vector<Op> &ops, std::vector<char> &send,
                          std::vector<char> &recv, Device *d) {
  char *s_arena = send.data(), *r_arena = recv.data();
  void *stream = nullptr;
  bool spread = false;  // this case's operations over all the streams
  cohort_status_t s = COHORT_SUCCESS;
  if (d != nullptr) {
    if (!d->grow(&d->send, &d->send_cap, send.size()) ||
        !d->grow(&d->recv, &d->recv_cap, recv.size()))
      return COHORT_ERR_NO_MEMORY;
    s = cohort_memcpy(d->send, send.data(), send.size());
    if (s == COHORT_SUCCESS) s = cohort_memcpy(d->recv, recv.data(), recv.size());
    if (s != COHORT_SUCCESS) return s;
    s_arena = d->send;
    r_arena = d->recv;
    if (!d->streams.empty()) {
      spread = d->streams.size() > 1 && d->calls % 3 == 2;
      stream = d->streams[d->calls++ % d->streams.size()];
    }
  }
  const bool captured = d != nullptr && d->graph > 0 && stream != nullptr && !spread;
  const std::vector<char> initial = captured ? recv : std::vector<char>();
  if (captured && d->driver.begin_capture(stream, mpi_test::CudaDriver::kCaptureThreadLocal)) {
    return COHORT_ERR_CUDA;
  }
  cohort_group_start();
  for (size_t i = 0; i < ops.size(); ++i) {
    void *on = spread ? d->streams[i % d->streams.size()] : stream;
    if (s == COHORT_SUCCESS) s = post(team, ops[i], s_arena, r_arena, on);
  }
  const cohort_status_t ended = cohort_group_end();
  if (s == COHORT_SUCCESS) s = ended;
  if (captured) return replay_group(*d, stream, initial, recv, s);
  // A group on several streams runs on the first stream it names and the others wait for its
  // end: waiting for the last one it names is enough (and waits for its copies back).
  void *waited = stream;
  if (spread)
    waited = ops.empty() ? nullptr : d->streams[std::min(ops.size(), d->streams.size()) - 1];
  if (s == COHORT_SUCCESS && waited != nullptr && d->driver.stream_sync(waited) != 0) {
    return COHORT_ERR_CUDA;
  }
  if (s == COHORT_SUCCESS && d != nullptr) s = cohort_memcpy(recv.data(), d->recv, recv.size());
  return s;
}

// A small allreduce after the group, on the same stream (or blocking): each rank's rank + 1.
long check_allreduce(cohort_team_t team, int rank, int size, Device *d, long *failures) {
  constexpr size_t kCount = 17;
  std::vector<int32_t> in(kCount, rank + 1), out(kCount, -1);
  void *stream =
      d && !d->streams.empty() ? d->streams[(d->calls - 1) % d->streams.size()] : nullptr;
  cohort_status_t s = COHORT_SUCCESS;
  if (d == nullptr) {
    s = cohort_allreduce(team, in.data(), out.data(), kCount, COHORT_INT32, COHORT_SUM);
  } else {  // in the send arena's first bytes, which the group only read
    s = cohort_memcpy(d->send, in.data(), sizeof(int32_t) * kCount);
    if (s == COHORT_SUCCESS && stream != nullptr) {
      s = cohort_allreduce_stream(team, d->send, d->send, kCount, COHORT_INT32, COHORT_SUM, stream);
      if (s == COHORT_SUCCESS && d->driver.stream_sync(stream) != 0) s = COHORT_ERR_CUDA;
    } else if (s == COHORT_SUCCESS) {
      s = cohort_allreduce(team, d->send, d->send, kCount, COHORT_INT32, COHORT_SUM);
    }
    if (s == COHORT_SUCCESS) s = cohort_memcpy(out.data(), d->send, sizeof(int32_t) * kCount);
  }
  if (s != COHORT_SUCCESS) {
    if ((*failures)++ < 10)
      std::fprintf(stderr, "[rank %d] allreduce after a group: %s: %s\n", rank,
                   cohort_status_string(s), cohort_last_error());
    return 0;
  }
  long bad = 0;
  for (int32_t v : out) bad += v != size * (size + 1) / 2;
  return bad;
}

long check_case(long iter, const std::vector<Op> &ops, const std::vector<char> &recv, int rank,
                long *reported) {
  long bad = 0;
  auto report = [&](const char *what, const Message &m, size_t j, int got, int want) {
    if ((*reported)++ < 10)
      std::fprintf(stderr,
                   "[rank %d] case %ld: message %d from %d (%zu x dtype %d): %s %zu: got %d, "
                   "expected %d\n",
                   rank, iter, m.index, m.from, m.count, m.dtype, what, j, got, want);
  };
  for (const Op &op : ops) {
    if (op.send) continue;
    const Message &m = *op.m;
    const auto *p = reinterpret_cast<const unsigned char *>(recv.data() + op.offset);
    for (size_t j = 0; j < m.bytes(); ++j) {
      if (p[j] != pattern(iter, m, j)) bad += (report("byte", m, j, p[j], pattern(iter, m, j)), 1);
    }
    for (size_t j = 1; j <= kGuard; ++j) {
      if (p[-static_cast<long>(j)] != kGuardByte)
        bad += (report("guard byte before", m, j, p[-static_cast<long>(j)], kGuardByte), 1);
    }
  }
  return bad;
}

// Calls that must be refused, on every rank alike (nothing of them may run).
long check_refusals(cohort_team_t team, int rank, Device *d) {
  long bad = 0;
  char byte = 0;
  auto expect = [&](const char *what, cohort_status_t got, cohort_status_t want) {
    if (got == want) return;
    ++bad;
    std::fprintf(stderr, "[rank %d] %s: got %s, expected %s (%s)\n", rank, what,
                 cohort_status_string(got), cohort_status_string(want), cohort_last_error());
  };
  cohort_group_start();
  cohort_send(team, &byte, 1, COHORT_UINT8, rank);
  cohort_recv_stream(team, d->recv, 1, COHORT_UINT8, rank, d->streams[0]);
  expect("a group mixing blocking and stream-ordered operations", cohort_group_end(),
         COHORT_ERR_INVALID_USAGE);
  // Stream-ordered operations take device memory (cohort.h), alone or in a group.
  expect("cohort_send_stream on host memory",
         cohort_send_stream(team, &byte, 1, COHORT_UINT8, rank, d->streams[0]),
         COHORT_ERR_INVALID_ARG);
  if (std::strstr(cohort_last_error(), "the buffer is host memory") == nullptr) {
    ++bad;
    std::fprintf(stderr, "[rank %d] cohort_send_stream on host memory: %s\n", rank,
                 cohort_last_error());
  }
  cohort_group_start();
  cohort_recv_stream(team, &byte, 1, COHORT_UINT8, rank, d->streams[0]);
  expect("a group with cohort_recv_stream on host memory", cohort_group_end(),
         COHORT_ERR_INVALID_ARG);
  return bad;
}

// The driver and the streams on every rank, or false (then the run skips).
bool start_device(Device *d, const Options &o) {
  bool ok = d->driver.start() && d->grow(&d->send, &d->send_cap, 4096) &&
            d->grow(&d->recv, &d->recv_cap, 4096);
  d->graph = o.graph;
  if (o.graph > 0 && (o.streams == 0 || !d->driver.graphs())) ok = false;
  for (int i = 0; ok && i < o.streams; ++i) {
    d->streams.push_back(d->driver.new_stream());
    ok = d->streams.back() != nullptr;
  }
  int everywhere = 0, mine = ok ? 1 : 0;
  MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return everywhere != 0;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Options o = mpi_test::parse_random_options(argc, argv, "p2p_random", 2000);
  mpi_test::place_on_fake_host(o, rank, "p2p-node-");
  Device device;
  Device *d = o.device || o.streams > 0 ? &device : nullptr;
  if (d != nullptr && !start_device(d, o)) {  // exit 77: a skip
    if (rank == 0) std::printf("SKIP: no CUDA device (or driver) on some rank to run on\n");
    MPI_Finalize();
    return 77;
  }
  long bad = 0, failures = 0, reported = 0, messages = 0;
  const double t0 = MPI_Wtime();
  {
    cohort::Team team(MPI_COMM_WORLD);
    if (d != nullptr && !d->streams.empty()) bad += check_refusals(team.get(), rank, d);
    std::mt19937_64 shared(o.seed);                                   // same on every rank
    std::mt19937_64 mine(o.seed * 0x9E3779B97F4A7C15ull + rank + 1);  // this rank's order
    int threads_before = -1;  // after the first case: the progress engine runs by then
    for (long iter = 0; iter < o.iters; ++iter) {
      if (iter == 1) threads_before = mpi_test::thread_count();
      const std::vector<Message> all = draw_traffic(shared, o, size);
      const bool then_allreduce = shared() % 8 == 0;
      size_t send_bytes = 0, recv_bytes = 0;
      const std::vector<Op> ops = my_ops(all, rank, mine, &send_bytes, &recv_bytes);
      std::vector<char> send(std::max<size_t>(send_bytes, 1));
      std::vector<char> recv(recv_bytes, static_cast<char>(kGuardByte));
      for (const Op &op : ops) {
        if (!op.send) continue;
        ++messages;
        for (size_t j = 0; j < op.m->bytes(); ++j) {
          send[op.offset + j] = static_cast<char>(pattern(iter, *op.m, j));
        }
      }
      cohort_status_t s = run_group(team.get(), ops, send, recv, d);
      if (s != COHORT_SUCCESS) {
        if (failures++ < 10)
          std::fprintf(stderr, "[rank %d] case %ld: %zu operations: %s: %s\n", rank, iter,
                       ops.size(), cohort_status_string(s), cohort_last_error());
      } else {
        bad += check_case(iter, ops, recv, rank, &reported);
      }
      if (then_allreduce) bad += check_allreduce(team.get(), rank, size, d, &failures);
    }
    // Each group may start and stop the progress engine's polling: never another thread.
    const int threads_after = mpi_test::thread_count();
    if (threads_before >= 0 && threads_after > threads_before + 1) {
      ++failures;
      std::fprintf(stderr, "[rank %d] %d threads after the first group, %d after the last\n", rank,
                   threads_before, threads_after);
    }
  }
  long totals[3] = {bad, failures, messages};
  MPI_Allreduce(MPI_IN_PLACE, totals, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf(
        "p2p_random: %ld groups on %d ranks, %ld messages, %ld bad bytes, %ld failed "
        "calls, %.1f s\n",
        o.iters, size, totals[2], totals[0], totals[1], MPI_Wtime() - t0);
  }
  MPI_Finalize();
  return totals[0] == 0 && totals[1] == 0 ? 0 : 1;
}
