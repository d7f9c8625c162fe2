// UCX channels between two workers of this process: byte streams arrive whole and in order
// through the staging slots and posted receives, tags keep teams and senders apart, and direct
// messages land whole, in order, in the destination or in pieces for a reduction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "topo/plan.h"
#include "tl_ucx/tag_channel.h"
#include "tl_ucx/ucx_transport.h"
#include "tl_ucx/worker.h"

namespace cohort::tl_ucx {
namespace {

struct Pair {
  std::shared_ptr<Worker> a, b;
  Endpoint *a_to_b = nullptr;
  std::vector<LaneLink> a_lanes;  // a's lanes to b's, as many as both have
  std::vector<Lane *> b_lanes;    // b's lanes that a's reach
};

// Two workers with an endpoint from a to b; a has `a_lanes` lanes, b `b_lanes`; skips where
// UCX has no network transport.
void connect_pair(Pair *pair, int a_lanes = 3, int b_lanes = 2) {
  ASSERT_EQ(Worker::create(&pair->a, "", a_lanes), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(Worker::create(&pair->b, "", b_lanes), COHORT_SUCCESS) << last_error();
  if (pair->b->address().empty()) GTEST_SKIP() << "UCX offers no network transport here";
  ASSERT_EQ(pair->a->endpoint(pair->b->address(), "worker b", &pair->a_to_b), COHORT_SUCCESS)
      << last_error();
  ASSERT_EQ(pair->a->lane_links(pair->b->lane_addresses(), "worker b", &pair->a_lanes),
            COHORT_SUCCESS)
      << last_error();
  pair->b_lanes = pair->b->lanes(pair->a_lanes.size());
  ASSERT_EQ(pair->a_lanes.size(), static_cast<size_t>(std::min(a_lanes, b_lanes)));
  ASSERT_EQ(pair->b_lanes.size(), pair->a_lanes.size());
}

// Streams `words` 64-bit counters (starting at `first`) from `to` to `from` in random chunks,
// driving both ends from this thread; returns the index of the first wrong word or ~0.
uint64_t stream(Worker &sender, SendChannel &to, RecvChannel &from, uint64_t words, uint64_t first,
                unsigned seed) {
  std::mt19937 random(seed);
  uint64_t sent = 0, received = 0;
  int64_t deadline = deadline_after(20);
  while (received < words && now_ns() < deadline) {
    size_t lent = 0;
    if (sent < words) {
      auto *space = static_cast<uint64_t *>(to.reserve(&lent));
      uint64_t n = std::min<uint64_t>({lent / 8, words - sent, random() % 9000 + 1});
      for (uint64_t i = 0; i < n; ++i) space[i] = first + sent + i;
      if (n > 0) to.commit(n * 8);
      sent += n;
    }
    sender.progress();
    size_t arrived = 0;
    auto *data = static_cast<const uint64_t *>(from.peek(&arrived));
    uint64_t n = std::min<uint64_t>(arrived / 8, random() % 12000 + 1);
    for (uint64_t i = 0; i < n; ++i) {
      if (data[i] != first + received + i) return received + i;
    }
    if (n > 0) from.consume(n * 8);
    received += n;
  }
  return received == words ? ~0ull : received;
}

TEST(UcxChannel, StreamsEightMiBInOrderInRandomChunks) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  ucp_tag_t tag = make_tag(7, 3);
  SendChannel to(*pair.a, *pair.a_to_b, tag);
  RecvChannel from(*pair.b, tag);
  EXPECT_EQ(stream(*pair.a, to, from, (8u << 20) / 8, 1000, 1), ~0ull);
}

TEST(UcxChannel, TagsKeepTeamsAndSendersApart) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  // Three streams on one endpoint: team 1 from rank 0 and rank 1, team 2 from rank 0.
  ucp_tag_t tags[3] = {make_tag(1, 0), make_tag(1, 1), make_tag(2, 0)};
  std::vector<std::unique_ptr<SendChannel>> to;
  std::vector<std::unique_ptr<RecvChannel>> from;
  for (ucp_tag_t tag : tags) {
    to.push_back(std::make_unique<SendChannel>(*pair.a, *pair.a_to_b, tag));
    from.push_back(std::make_unique<RecvChannel>(*pair.b, tag));
  }
  // Everything is sent before anything is read, so all three interleave on the wire.
  constexpr uint64_t kWords = 3000;
  for (int k = 0; k < 3; ++k) {
    uint64_t sent = 0;
    int64_t deadline = deadline_after(30);
    while (sent < kWords && now_ns() < deadline) {
      size_t lent = 0;
      auto *space = static_cast<uint64_t *>(to[k]->reserve(&lent));
      uint64_t n = std::min<uint64_t>({lent / 8, kWords - sent, 100});
      for (uint64_t i = 0; i < n; ++i) space[i] = (static_cast<uint64_t>(k) << 32) + sent + i;
      if (n > 0) to[k]->commit(n * 8);
      sent += n;
      pair.b->progress();
    }
    ASSERT_EQ(sent, kWords);
  }
  for (int k = 2; k >= 0; --k) {  // read in the other order
    uint64_t received = 0;
    int64_t deadline = deadline_after(30);
    while (received < kWords && now_ns() < deadline) {
      pair.a->progress();
      size_t arrived = 0;
      auto *data = static_cast<const uint64_t *>(from[k]->peek(&arrived));
      for (size_t i = 0; i < arrived / 8; ++i) {
        ASSERT_EQ(data[i], (static_cast<uint64_t>(k) << 32) + received + i) << "stream " << k;
      }
      from[k]->consume(arrived / 8 * 8);
      received += arrived / 8;
    }
    EXPECT_EQ(received, kWords) << "stream " << k;
  }
}

TEST(UcxChannel, SenderLendsNothingWhileEverySlotIsInFlightThenResumes) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  // Slots are freed only as UCX finishes with them; with a receiver that does not read yet,
  // a large message stays in flight (rendezvous), so the sender must stop lending.
  ucp_tag_t tag = make_tag(9, 0);
  SendChannel to(*pair.a, *pair.a_to_b, tag, {}, {}, 2);
  int lent_slots = 0;
  for (int i = 0; i < 50; ++i) {
    size_t lent = 0;
    void *space = to.reserve(&lent);
    if (lent == 0) break;
    std::memset(space, i + 1, lent);
    to.commit(lent);
    ++lent_slots;
  }
  EXPECT_GE(lent_slots, 2);
  EXPECT_LT(lent_slots, 50) << "a sender that never blocks would buffer without bound";
  // Once the receiver reads, every message arrives whole and the sender lends again.
  RecvChannel from(*pair.b, tag);
  int64_t deadline = deadline_after(20);
  int i = 0;
  while (i < lent_slots && now_ns() < deadline) {
    pair.a->progress();
    size_t arrived = 0;
    auto *data = static_cast<const unsigned char *>(from.peek(&arrived));
    if (arrived == 0) continue;
    ASSERT_EQ(arrived, kSlotBytes) << "message " << i;
    ASSERT_EQ(data[0], i + 1) << "message " << i;
    ASSERT_EQ(data[kSlotBytes - 1], i + 1) << "message " << i;
    from.consume(arrived);
    ++i;
  }
  EXPECT_EQ(i, lent_slots) << "messages that arrived";
  while (to.in_flight() > 0 && now_ns() < deadline) {
    pair.a->progress();
    pair.b->progress();
  }
  EXPECT_EQ(to.in_flight(), 0);
  size_t lent = 0;
  EXPECT_NE(to.reserve(&lent), nullptr);
  EXPECT_EQ(lent, kSlotBytes);
}

TEST(UcxChannel, ReadingNothingWhileTheReceiveIsInFlightLosesNothing) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  // A reader that hands back what it peeked, even when that was nothing, must not disturb
  // the receives in flight (this once re-posted them, and the next messages were lost).
  ucp_tag_t tag = make_tag(11, 0);
  RecvChannel from(*pair.b, tag);
  for (int i = 0; i < 10; ++i) {
    size_t arrived = 0;
    EXPECT_EQ(from.peek(&arrived), nullptr);
    EXPECT_EQ(arrived, 0u);
    from.consume(arrived);
  }
  SendChannel to(*pair.a, *pair.a_to_b, tag);
  std::vector<uint64_t> values;
  for (uint64_t k = 0; k < 3; ++k) {
    size_t lent = 0;
    auto *space = static_cast<uint64_t *>(to.reserve(&lent));
    ASSERT_NE(space, nullptr);
    *space = 0xC0DE0000 + k;
    to.commit(8);
  }
  int64_t deadline = deadline_after(20);
  while (values.size() < 3 && now_ns() < deadline) {
    pair.a->progress();
    size_t arrived = 0;
    auto *data = static_cast<const uint64_t *>(from.peek(&arrived));
    for (size_t i = 0; i < arrived / 8; ++i) values.push_back(data[i]);
    from.consume(arrived / 8 * 8);
  }
  EXPECT_EQ(values, (std::vector<uint64_t>{0xC0DE0000, 0xC0DE0001, 0xC0DE0002}));
}

// What UCX's error callback does for a lost peer (and what COHORT_INJECT_UCX_FAILURE
// simulates): both directions break at once, naming the peer and UCX's reason, instead of
// waiting for the collective timeout.
TEST(UcxChannel, AFailedEndpointBreaksBothDirectionsNamingThePeer) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  ucp_tag_t tag = make_tag(13, 0);
  SendChannel to(*pair.a, *pair.a_to_b, tag);
  RecvChannel from(*pair.a, make_tag(14, 1), pair.a_to_b);
  RecvChannel unrelated(*pair.a, make_tag(15, 1));
  EXPECT_EQ(to.failure(), COHORT_SUCCESS);
  EXPECT_EQ(from.failure(), COHORT_SUCCESS);
  to.fail_after(2);  // the second message sent breaks the endpoint
  for (int k = 0; k < 2; ++k) {
    size_t lent = 0;
    ASSERT_NE(to.reserve(&lent), nullptr) << "message " << k;
    to.commit(8);
  }
  size_t lent = 1;
  EXPECT_EQ(to.reserve(&lent), nullptr);
  EXPECT_EQ(lent, 0u);
  EXPECT_EQ(to.failure(), COHORT_ERR_SYSTEM);
  EXPECT_NE(last_error().find("UCX connection to worker b failed"), std::string::npos)
      << last_error();
  EXPECT_NE(last_error().find("reset"), std::string::npos) << last_error();
  EXPECT_EQ(from.failure(), COHORT_ERR_SYSTEM);
  EXPECT_NE(last_error().find("worker b"), std::string::npos) << last_error();
  EXPECT_EQ(unrelated.failure(), COHORT_SUCCESS) << "a channel from another peer still works";
  // A team made later reaches the same worker through a fresh endpoint.
  Endpoint *again = nullptr;
  ASSERT_EQ(pair.a->endpoint(pair.b->address(), "worker b", &again), COHORT_SUCCESS);
  EXPECT_NE(again, pair.a_to_b);
  EXPECT_EQ(again->failure(), COHORT_SUCCESS);
}

// Bytes whose every position tells its message and offset apart.
std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>((i * 131 + seed * 7) >> 3);
  return out;
}

// Sends `data` as a direct message and receives it, into `landing` (nullptr: the channel's
// pieces, copied out here in the order lent); returns what arrived.
std::vector<unsigned char> direct(Pair &pair, SendChannel &to, RecvChannel &from,
                                  const std::vector<unsigned char> &data, unsigned char *landing) {
  std::vector<unsigned char> got(data.size());
  EXPECT_EQ(to.start_direct(data.data(), data.size()), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(from.start_direct(landing, data.size()), COHORT_SUCCESS) << last_error();
  size_t received = 0;
  bool sent = false;
  const int64_t deadline = deadline_after(30);
  while ((received < data.size() || !sent) && now_ns() < deadline) {
    sent = sent || to.direct_sent();
    pair.b->progress();
    size_t n = 0;
    const auto *piece = static_cast<const unsigned char *>(from.peek_direct(&n));
    if (n == 0) continue;
    if (landing != nullptr) {
      EXPECT_EQ(piece, landing + received) << "pieces land in place";
    }
    std::memcpy(got.data() + received, piece, n);
    from.consume_direct(n);
    received += n;
  }
  EXPECT_TRUE(sent);
  EXPECT_EQ(received, data.size());
  return got;
}

TEST(UcxDirect, FragmentsAreAnEighthBetweenAQuarterAndFourMiB) {
  EXPECT_EQ(fragment_bytes(64 << 10), 256u << 10);
  EXPECT_EQ(fragment_bytes(8 << 20), 1u << 20);
  EXPECT_EQ(fragment_bytes((8 << 20) + 8000), (1u << 20) + (64 << 10));  // rounded up to 64 KiB
  EXPECT_EQ(fragment_bytes(size_t{1} << 30), 4u << 20);
}

TEST(UcxDirect, FragmentsStayWithinTheLargestSet) {
  EXPECT_EQ(fragment_bytes(size_t{1} << 30, 1 << 20), 1u << 20);
  EXPECT_EQ(fragment_bytes(32 << 20, 1 << 20), 1u << 20);
  EXPECT_EQ(fragment_bytes(4 << 20, 16 << 20), 512u << 10);  // an eighth still
  EXPECT_EQ(fragment_bytes(size_t{1} << 30, 16 << 20), 16u << 20);
  EXPECT_EQ(fragment_bytes(64 << 10, 128 << 10), 128u << 10);  // below 256 KiB: the largest
}

TEST(UcxDirect, MessagesLandWholeInPlaceAndInPiecesInOrder) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  const ucp_tag_t tag = make_tag(21, 2);
  SendChannel to(*pair.a, *pair.a_to_b, tag, {64 << 10}, pair.a_lanes);
  RecvChannel from(*pair.b, tag, nullptr, {64 << 10}, pair.b_lanes);
  EXPECT_EQ(to.direct_min(), 64u << 10);
  EXPECT_EQ(from.direct_min(), 64u << 10);
  // One fragment, several, the last one short, more than a sender keeps in flight.
  const size_t sizes[] = {64 << 10, (3 << 20) + 17, 40 << 20};
  unsigned seed = 0;
  for (size_t bytes : sizes) {
    for (bool in_place : {true, false}) {
      const std::vector<unsigned char> data = pattern(bytes, ++seed);
      std::vector<unsigned char> landing(bytes + 64, 0xEE);
      std::vector<unsigned char> got =
          direct(pair, to, from, data, in_place ? landing.data() : nullptr);
      EXPECT_TRUE(got == data) << bytes << " bytes, " << (in_place ? "in place" : "in pieces");
      if (in_place) {
        EXPECT_TRUE(std::equal(landing.begin(), landing.begin() + bytes, data.begin()));
        EXPECT_EQ(landing[bytes], 0xEE) << "nothing past the message is written";
      }
    }
  }
  EXPECT_EQ(to.in_flight(), 0);
}

// Fragments of 64 KiB (COHORT_UCX_FRAGMENT_BYTES at its least): many more than a sender keeps
// in flight or a reducing receiver has buffers for, each lane taking them in turn.
TEST(UcxDirect, SmallFragmentsLandInOrder) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  const ucp_tag_t tag = make_tag(23, 2);
  const DirectForm form{64 << 10, 64 << 10};
  SendChannel to(*pair.a, *pair.a_to_b, tag, form, pair.a_lanes);
  RecvChannel from(*pair.b, tag, nullptr, form, pair.b_lanes);
  unsigned seed = 40;
  for (size_t bytes : {size_t{64 << 10}, size_t{(3 << 20) + 17}}) {
    for (bool in_place : {true, false}) {
      const std::vector<unsigned char> data = pattern(bytes, ++seed);
      std::vector<unsigned char> landing(bytes, 0xEE);
      std::vector<unsigned char> got =
          direct(pair, to, from, data, in_place ? landing.data() : nullptr);
      EXPECT_TRUE(got == data) << bytes << " bytes, " << (in_place ? "in place" : "in pieces");
    }
  }
  EXPECT_EQ(to.in_flight(), 0);
}

// The lanes' threads move a direct message: the caller only posts and looks (peek_direct and
// direct_sent progress no worker), whatever the lane counts of the two ends.
TEST(UcxDirect, TheLanesThreadsMoveMessagesTheCallerOnlyLooks) {
  for (auto [a_lanes, b_lanes] : {std::pair{1, 4}, std::pair{4, 4}}) {
    Pair pair;
    connect_pair(&pair, a_lanes, b_lanes);
    if (HasFatalFailure() || IsSkipped()) return;
    const ucp_tag_t tag = make_tag(27, 1);
    SendChannel to(*pair.a, *pair.a_to_b, tag, {64 << 10}, pair.a_lanes);
    RecvChannel from(*pair.b, tag, pair.a_to_b, {64 << 10}, pair.b_lanes);
    const std::vector<unsigned char> data = pattern((9 << 20) + 24, 11);
    std::vector<unsigned char> landing(data.size());
    ASSERT_EQ(to.start_direct(data.data(), data.size()), COHORT_SUCCESS);
    ASSERT_EQ(from.start_direct(landing.data(), landing.size()), COHORT_SUCCESS);
    size_t received = 0;
    bool sent = false;
    const int64_t deadline = deadline_after(30);
    while ((received < data.size() || !sent) && now_ns() < deadline) {
      sent = to.direct_sent();  // posts fragments as earlier ones leave
      size_t n = 0;
      if (from.peek_direct(&n) != nullptr) from.consume_direct(n);
      received += n;
      std::this_thread::yield();
    }
    EXPECT_EQ(received, data.size()) << a_lanes << " and " << b_lanes << " lanes";
    EXPECT_TRUE(landing == data) << a_lanes << " and " << b_lanes << " lanes";
    for (Lane *lane : pair.b_lanes) EXPECT_EQ(lane->in_flight(), 0);
  }
}

TEST(UcxDirect, DirectMessagesAndTheByteStreamKeepTheirOrdersApart) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  const ucp_tag_t tag = make_tag(23, 0);
  SendChannel to(*pair.a, *pair.a_to_b, tag, {64 << 10}, pair.a_lanes);
  RecvChannel from(*pair.b, tag, nullptr, {64 << 10}, pair.b_lanes);
  // A small message on the stream, a direct one, another small one: the receiver takes the
  // direct one first, and the two small ones still come in order, whole.
  for (uint64_t word : {0xA1ull, 0xA2ull}) {
    size_t lent = 0;
    auto *space = static_cast<uint64_t *>(to.reserve(&lent));
    ASSERT_NE(space, nullptr);
    *space = word;
    to.commit(8);
  }
  const std::vector<unsigned char> data = pattern(1 << 20, 5);
  std::vector<unsigned char> landing(1 << 20);
  EXPECT_TRUE(direct(pair, to, from, data, landing.data()) == data);
  std::vector<uint64_t> words;
  const int64_t deadline = deadline_after(20);
  while (words.size() < 2 && now_ns() < deadline) {
    pair.a->progress();
    size_t arrived = 0;
    auto *bytes = static_cast<const uint64_t *>(from.peek(&arrived));
    for (size_t i = 0; i < arrived / 8; ++i) words.push_back(bytes[i]);
    from.consume(arrived / 8 * 8);
  }
  EXPECT_EQ(words, (std::vector<uint64_t>{0xA1, 0xA2}));
}

// Both ends must expect one size (as MPI, the caller's duty); where a fragment that arrives is
// larger than the receive expects (an erroneous program), the receiver's channel breaks naming
// the sender instead of writing past the destination.
TEST(UcxDirect, AFragmentLargerThanExpectedBreaksTheReceivingChannel) {
  Pair pair;
  connect_pair(&pair);
  if (HasFatalFailure() || IsSkipped()) return;
  const ucp_tag_t tag = make_tag(25, 0);
  SendChannel to(*pair.a, *pair.a_to_b, tag, {64 << 10}, pair.a_lanes);
  RecvChannel from(*pair.b, tag, pair.a_to_b, {64 << 10}, pair.b_lanes);
  const std::vector<unsigned char> data = pattern(1 << 20, 9);  // fragments of 256 KiB
  std::vector<unsigned char> landing((100 << 10) + 8, 0xEE);
  ASSERT_EQ(to.start_direct(data.data(), data.size()), COHORT_SUCCESS);
  ASSERT_EQ(from.start_direct(landing.data(), 100 << 10), COHORT_SUCCESS);
  const int64_t deadline = deadline_after(20);
  size_t n = 0;
  while (from.failure() == COHORT_SUCCESS && now_ns() < deadline) {
    to.direct_sent();
    from.peek_direct(&n);
    EXPECT_EQ(n, 0u);
  }
  EXPECT_EQ(from.failure(), COHORT_ERR_SYSTEM);
  EXPECT_NE(last_error().find("UCX receive from worker b"), std::string::npos) << last_error();
  EXPECT_EQ(landing[100 << 10], 0xEE);
}

// A job of 4096 hosts, one rank each, seen from rank 1234: its team's creation makes UCX
// channels (and endpoints) only to the ranks its plan links it to (its rings' neighbours, its
// trees' parent and children), and to another rank when a collective first asks for it.  Every
// rank's record is this rank's own (the test's one worker address; nothing is sent).
TEST(UcxTransport, ACreationOf4096HostsConnectsOnlyThePeersItsPlanLinks) {
  constexpr int kHosts = 4096, kMe = 1234;
  std::vector<topo::NodeSummary> nodes;
  for (int h = 0; h < kHosts; ++h) nodes.push_back(topo::summarize_node({}, {{h, -1, 0}}));
  topo::Plan plan;
  ASSERT_EQ(topo::align_plan(nodes, kHosts, &plan), COHORT_SUCCESS) << last_error();
  tl::TeamView view;
  view.name = "team of 4096 hosts";
  view.rank = kMe;
  view.size = kHosts;
  view.node_count = kHosts;
  for (int r = 0; r < kHosts; ++r) {
    view.node_of_rank.push_back(r);
    view.local_rank.push_back(0);
  }
  view.describe = [](int r) { return "rank " + std::to_string(r); };
  view.plan_peers = topo::linked_ranks(plan, kMe);
  ASSERT_GE(view.plan_peers.size(), 2u);  // at least the ring's two neighbours
  ASSERT_LE(view.plan_peers.size(), 8u);
  std::unique_ptr<tl::Transport> ucx = make_ucx_transport();
  const size_t stride = ucx->record_bytes(view);
  std::vector<char> records(stride * kHosts);
  ASSERT_EQ(ucx->post(view, records.data() + stride * kMe), COHORT_SUCCESS) << last_error();
  for (int r = 0; r < kHosts; ++r) {
    std::memcpy(records.data() + stride * r, records.data() + stride * kMe, stride);
  }
  ASSERT_EQ(ucx->connect(view, tl::RecordTable{records.data(), stride, 0}), COHORT_SUCCESS)
      << last_error();
  std::lock_guard<std::mutex> lock(*ucx->serial());
  EXPECT_EQ(ucx->peers_connected(), static_cast<int>(view.plan_peers.size()));
  for (int r : view.plan_peers) {
    coll::PeerChannels c = ucx->channels(r);
    EXPECT_TRUE(c.to != nullptr && c.from != nullptr) << "plan peer " << r;
  }
  EXPECT_EQ(ucx->peers_connected(), static_cast<int>(view.plan_peers.size()));
  int far = 77;
  while (std::count(view.plan_peers.begin(), view.plan_peers.end(), far) > 0) ++far;
  EXPECT_TRUE(ucx->reaches(far));
  EXPECT_TRUE(ucx->channels(far).to != nullptr);  // made now, on first use
  EXPECT_EQ(ucx->peers_connected(), static_cast<int>(view.plan_peers.size()) + 1);
  EXPECT_FALSE(ucx->reaches(kMe));
  EXPECT_EQ(ucx->channels(kMe).to, nullptr);
}

TEST(UcxWorker, TeamIdsAreNeverHandedOutTwice) {
  std::shared_ptr<Worker> worker;
  ASSERT_EQ(Worker::create(&worker), COHORT_SUCCESS) << last_error();
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(worker->new_team_id()).second);
  EXPECT_EQ(seen.count(0), 0u) << "0 is never an id";
}

TEST(UcxWorker, TheProcessWorkerIsSharedWhileInUse) {
  std::shared_ptr<Worker> one, two;
  ASSERT_EQ(Worker::acquire("", 1, &one), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(Worker::acquire("", 1, &two), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(one.get(), two.get());
  EXPECT_EQ(make_tag(5, 3) >> kTagTeamShift, 5u);
  EXPECT_EQ(make_tag(5, 3) & kTagRankMask, 3u);
  EXPECT_NE(make_tag(5, 3), make_tag(5, 3, Stream::kDirect));
  EXPECT_EQ(make_tag(5, 3, Stream::kDirect) >> kTagTeamShift, 5u);
  EXPECT_EQ(make_tag(5, 3, Stream::kDirect) & kTagRankMask, 3u);
}

}  // namespace
}  // namespace cohort::tl_ucx
