// A transport that Cohort does not know, registered by a test: every byte of every channel is
// an MPI message on a duplicate of MPI_COMM_WORLD (one per commit).  Adding it took the three
// classes below and one registration line (main); collectives then run over it.
// usage: mpirun -np N transport_test collectives
#include <mpi.h>

#include <deque>
#include <vector>

#include "test_support.h"
#include "team/transport_table.h"

using namespace mpi_test;

namespace {

MPI_Comm g_wire = MPI_COMM_NULL;  // the transport's own communicator
long g_messages = 0;              // sent through it by this rank

class MpiOut final : public cohort::coll::SendChannel {
 public:
  explicit MpiOut(int peer) : peer_(peer) {}
  ~MpiOut() override {
    for (Pending &p : sent_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
  }
  void *reserve(size_t *bytes) override {
    while (!sent_.empty() && done(sent_.front())) sent_.pop_front();
    *bytes = 4096;
    sent_.push_back(Pending{std::vector<char>(*bytes), MPI_REQUEST_NULL});
    return sent_.back().data.data();
  }
  void commit(size_t bytes) override {
    MPI_Isend(sent_.back().data.data(), static_cast<int>(bytes), MPI_BYTE, peer_, 0, g_wire,
              &sent_.back().request);
    ++g_messages;
  }

 private:
  struct Pending {
    std::vector<char> data;
    MPI_Request request;
  };
  static bool done(Pending &p) {
    int flag = 0;
    MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  int peer_;
  std::deque<Pending> sent_;
};

class MpiIn final : public cohort::coll::RecvChannel {
 public:
  explicit MpiIn(int peer) : peer_(peer) {}
  const void *peek(size_t *bytes) override {
    int found = 0, count = 0;
    MPI_Status status;
    if (read_ == data_.size() && MPI_Iprobe(peer_, 0, g_wire, &found, &status) == MPI_SUCCESS &&
        found) {
      MPI_Get_count(&status, MPI_BYTE, &count);
      data_.resize(count);
      MPI_Recv(data_.data(), count, MPI_BYTE, peer_, 0, g_wire, MPI_STATUS_IGNORE);
      read_ = 0;
    }
    *bytes = data_.size() - read_;
    return data_.data() + read_;
  }
  void consume(size_t bytes) override { read_ += bytes; }

 private:
  int peer_;
  std::vector<char> data_;
  size_t read_ = 0;
};

class MpiTransport final : public cohort::tl::Transport {
 public:
  const char *name() const override { return "test-mpi"; }
  size_t record_bytes(const cohort::tl::TeamView &) const override { return 0; }
  cohort::Status post(const cohort::tl::TeamView &, void *) override { return COHORT_SUCCESS; }
  cohort::Status connect(const cohort::tl::TeamView &team,
                         const cohort::tl::RecordTable &) override {
    for (int r = 0; r < team.size; ++r) {
      out_.push_back(std::make_unique<MpiOut>(r));
      in_.push_back(std::make_unique<MpiIn>(r));
    }
    return COHORT_SUCCESS;
  }
  bool reaches(int peer) const override {
    return peer >= 0 && peer < static_cast<int>(out_.size());
  }
  cohort::coll::PeerChannels channels(int peer) override {
    return {out_[peer].get(), in_[peer].get()};
  }
  int peers_connected() const override { return static_cast<int>(out_.size()); }

 private:
  std::vector<std::unique_ptr<MpiOut>> out_;
  std::vector<std::unique_ptr<MpiIn>> in_;
};

// Allreduce, allgather and a send/recv ring over the test transport (world ranks are team
// ranks here), checked element by element; the transport must have carried the bytes.
void scenario_collectives() {
  MPI_Comm_dup(MPI_COMM_WORLD, &g_wire);
  {
    cohort::Team team(MPI_COMM_WORLD);
    std::vector<int32_t> sum(100003, g_rank + 1), all(g_size * 7, -1), mine(7, g_rank);
    CHECK_STATUS(
        cohort_allreduce(team.get(), sum.data(), sum.data(), sum.size(), COHORT_INT32, COHORT_SUM),
        COHORT_SUCCESS);
    CHECK_STATUS(cohort_allgather(team.get(), mine.data(), all.data(), 7, COHORT_INT32),
                 COHORT_SUCCESS);
    long bad = 0;
    for (int32_t v : sum) bad += v != g_size * (g_size + 1) / 2;
    for (int i = 0; i < g_size * 7; ++i) bad += all[i] != i / 7;
    CHECK(bad == 0, "%ld wrong elements", bad);
    CHECK(g_size == 1 || g_messages > 0, "the test transport carried no message");
    if (g_rank == 0) printf("rank 0 sent %ld messages through the test transport\n", g_messages);
  }
  MPI_Comm_free(&g_wire);
}

}  // namespace

int main(int argc, char **argv) {
  cohort::register_transport({"test-mpi", "MPI messages (a test)", [] {
                                return std::unique_ptr<cohort::tl::Transport>(new MpiTransport);
                              }});
  return run_main(argc, argv, {{"collectives", scenario_collectives}});
}
