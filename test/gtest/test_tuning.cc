// Tuning files: their grammar, where their rules sit in the selection, and their errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "coll/select.h"
#include "core/status.h"

namespace cohort::coll {
namespace {

const char *kFile =
    "# measured\n"
    "cohort-tuning 1\n"
    "machine node7: NVIDIA H100, 4 ranks on 1 host(s)\n"
    "\n"
    "rule allreduce@host:0-8K=ring ranks=4 hosts=1 us=8:3.1,1K:3.40\n"
    "rule allreduce@host:8K-=direct*2 ranks=2-4 hosts=1-2\n"
    "  rule broadcast@cuda-device:0-=pipelined ranks=4 hosts=1   # trailing words are errors\n";

std::string chosen(const Selection &s, Collective c, size_t bytes, int ranks, int hosts,
                   cohort_memory_kind_t memory = COHORT_MEMORY_HOST) {
  const SelectRule *rule = s.choose(c, memory, bytes, ranks, hosts);
  if (rule == nullptr) return "(none)";
  return std::string(rule->algorithm->name) +
         (rule->channels > 1 ? "*" + std::to_string(rule->channels) : "") +
         (rule->origin == RuleOrigin::kTuningFile ? " (file)" : "");
}

std::string without_last_line_comment() {
  std::string text = kFile;
  return text.substr(0, text.find("   # trailing")) + "\n";
}

TEST(Tuning, RulesApplyToTheRanksAndHostsTheyWereMeasuredOn) {
  Tuning t;
  EXPECT_EQ(parse_tuning(kFile, "test", &t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("test:7: '#' is not ranks="), std::string::npos) << last_error();
  ASSERT_EQ(parse_tuning(without_last_line_comment(), "test", &t), COHORT_SUCCESS) << last_error();
  ASSERT_EQ(t.rules.size(), 3u);
  EXPECT_EQ(t.machine, "node7: NVIDIA H100, 4 ranks on 1 host(s)");
  EXPECT_EQ(t.rules[0].measured, "8:3.1 1K:3.40");
  Selection s;
  s.add_tuning(t);
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1), "ring (file)");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 3, 1), "direct") << "measured at 4 ranks only";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 2), "hier") << "measured on one host";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8 << 10, 2, 2), "direct*2 (file)");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8 << 10, 5, 1), "direct") << "2-4 ranks: defaults";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8 << 10, 4, 3), "hier") << "1-2 hosts: defaults";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1, COHORT_MEMORY_CUDA_HOST), "direct")
      << "the file's rule covers pageable host memory only";
  EXPECT_EQ(chosen(s, Collective::kBroadcast, 8, 4, 1, COHORT_MEMORY_CUDA_DEVICE),
            "pipelined (file)");
  EXPECT_EQ(chosen(s, Collective::kBroadcast, 8, 4, 1), "chain") << "host memory: defaults";
  const std::string text = s.describe();
  EXPECT_NE(text.find("0 <= bytes < 8K, 4 ranks, 1 host -> ring"), std::string::npos) << text;
  EXPECT_NE(text.find("2-4 ranks, 1-2 hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("measured (bytes:us): 8:3.1 1K:3.40"), std::string::npos) << text;
  EXPECT_NE(text.find("(the tuning file)"), std::string::npos) << text;
  EXPECT_EQ(s.tuning_machine(), t.machine);
}

TEST(Tuning, OverridesWinOverTheFileAndTheFileOverTheDefaults) {
  Tuning t;
  ASSERT_EQ(parse_tuning("cohort-tuning 1\nrule allreduce=ring*2 ranks=1-64 hosts=1\n", "t", &t),
            COHORT_SUCCESS)
      << last_error();
  Selection s;
  ASSERT_EQ(Selection::parse("allreduce:0-1K=direct", &s), COHORT_SUCCESS) << last_error();
  s.add_tuning(t);
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 4, 1), "direct") << "COHORT_COLL_ALGO first";
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1024, 4, 1), "ring*2 (file)");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 1024, 4, 2), "hier") << "then the defaults";
  const std::string text = s.describe();
  EXPECT_LT(text.find("(COHORT_COLL_ALGO)"), text.find("(the tuning file)")) << text;
  EXPECT_LT(text.find("(the tuning file)"), text.find("one hop: latency")) << text;
}

TEST(Tuning, TheHashFollowsTheText) {
  Tuning a, b, c;
  const char *one = "cohort-tuning 1\nrule allreduce=ring ranks=2 hosts=1\n";
  ASSERT_EQ(parse_tuning(one, "a", &a), COHORT_SUCCESS);
  ASSERT_EQ(parse_tuning(one, "another/path", &b), COHORT_SUCCESS);
  ASSERT_EQ(parse_tuning("cohort-tuning 1\nrule allreduce=ring ranks=3 hosts=1\n", "c", &c),
            COHORT_SUCCESS);
  EXPECT_EQ(a.hash, b.hash) << "the same text wherever it lies";
  EXPECT_NE(a.hash, c.hash);
}

TEST(Tuning, BadFilesAreNamedErrorsWithTheLine) {
  struct Case {
    std::string text;
    const char *says;
  };
  const std::string head = "cohort-tuning 1\n";
  const std::vector<Case> cases = {
      {"", "empty: no 'cohort-tuning 1' line"},
      {"# only a comment\n", "empty: no 'cohort-tuning 1' line"},
      {"cohort-tuning 2\n", "t:1: the first line that is no comment must be 'cohort-tuning 1'"},
      {"rule allreduce=ring ranks=2 hosts=1\n", "t:1: the first line that is no comment"},
      {head + "rule allreduce=ring hosts=1\n", "t:2: a rule needs ranks= and hosts="},
      {head + "rule allreduce=ring ranks=2\n", "t:2: a rule needs ranks= and hosts="},
      {head + "rule allreduce=ring ranks=0 hosts=1\n", "t:2: ranks= takes N or LO-HI"},
      {head + "rule allreduce=ring ranks=4-2 hosts=1\n", "t:2: ranks= takes N or LO-HI"},
      {head + "rule allreduce=ring ranks=2 hosts=x\n", "t:2: hosts= takes N or LO-HI"},
      {head + "rule allreduce=ring ranks=2K hosts=1\n", "t:2: ranks= takes N or LO-HI"},
      {head + "rule allreduce@cuda-device:1M-=oneshot ranks=2 hosts=1\n",
       "oneshot takes at most 64K per rank: the range starts above it"},
      {head + "rule allreduce=ring ranks=2 ranks=3 hosts=1\n", "'ranks=3' is not ranks="},
      {head + "rule allreduce=ring ranks=2 hosts=1 colour=red\n", "'colour=red' is not"},
      {head + "rule allreduce=ring ranks=2 hosts=1 us=8:fast\n", "us= takes BYTES:MICROSECONDS"},
      {head + "rule allreduce=ring ranks=2 hosts=1 us=8:-1\n", "us= takes BYTES:MICROSECONDS"},
      {head + "rule allreduce=nosuch ranks=2 hosts=1\n",
       "t:2: rule 'allreduce=nosuch': no algorithm 'nosuch' for allreduce"},
      {head + "rule allreduce@host=oneshot ranks=2 hosts=1\n", "oneshot runs on cuda-device"},
      {head + "rule\n", "t:2: rule '': no '='"},
      {head + "machine a\nmachine b\n", "t:3: a line is 'rule ...', 'machine ...' (once)"},
      {head + "\n\n  bogus line\n", "t:4: a line is 'rule ...'"},
  };
  for (const Case &c : cases) {
    Tuning t;
    t.machine = "untouched";
    EXPECT_EQ(parse_tuning(c.text, "t", &t), COHORT_ERR_INVALID_ARG) << c.text;
    EXPECT_NE(last_error().find(c.says), std::string::npos) << c.text << ": " << last_error();
    EXPECT_EQ(t.machine, "untouched") << "a failed parse leaves the output as it was";
  }
}

TEST(Tuning, LoadingNamesTheFileItCannotRead) {
  Tuning t;
  EXPECT_EQ(load_tuning("/tmp", &t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("COHORT_TUNING_FILE=/tmp: not a regular file"), std::string::npos)
      << last_error();
  EXPECT_EQ(load_tuning("/nonexistent/cohort.tune", &t), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("COHORT_TUNING_FILE=/nonexistent/cohort.tune: cannot open the "
                              "file: No such file or directory"),
            std::string::npos)
      << last_error();
  char path[] = "/tmp/cohort_tuning_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs(without_last_line_comment().c_str(), f);
  fclose(f);
  EXPECT_EQ(load_tuning(path, &t), COHORT_SUCCESS) << last_error();
  EXPECT_EQ(t.rules.size(), 3u);
  remove(path);
}

// A grid of two or three candidates over `bytes`, times by candidate.
TuningGrid grid_of(Collective c, std::vector<std::pair<const char *, int>> candidates,
                   std::vector<size_t> bytes, std::vector<std::vector<double>> us) {
  TuningGrid grid{c, {}, std::move(bytes), std::move(us)};
  for (auto [name, channels] : candidates) {
    grid.candidates.push_back({find_algorithm(c, name), channels});
  }
  return grid;
}

TEST(TuningRules, TheFastestWinsOnlyWhenMoreThanFivePercentFaster) {
  const TuningGrid switches = grid_of(Collective::kAllreduce, {{"direct", 1}, {"ring", 2}},
                                      {8, 64, 512}, {{1.0, 2.0, 4.0}, {1.03, 1.0, 1.0}});
  EXPECT_EQ(tuning_rules(switches, "host", "ranks=2 hosts=1"),
            (std::vector<std::string>{
                "rule allreduce@host:0-64=direct ranks=2 hosts=1 us=8:1.00",
                "rule allreduce@host:64-=ring*2 ranks=2 hosts=1 us=64:1.00,512:1.00"}));
  const TuningGrid stays = grid_of(Collective::kAllreduce, {{"direct", 1}, {"ring", 1}},
                                   {8, 64, 512}, {{1.0, 1.04, 1.0}, {1.1, 1.0, 1.2}});
  EXPECT_EQ(tuning_rules(stays, "host", "ranks=4 hosts=2"),
            (std::vector<std::string>{
                "rule allreduce@host:0-=direct ranks=4 hosts=2 us=8:1.00,64:1.04,512:1.00"}))
      << "ring at 64 is within 5%: no new range";
  const TuningGrid gap = grid_of(Collective::kAllreduce, {{"direct", 1}, {"ring", 1}}, {8, 64, 512},
                                 {{1.0, -1, 1.0}, {2.0, 3.0, 2.0}});
  EXPECT_EQ(tuning_rules(gap, "host", "ranks=2 hosts=1").size(), 3u)
      << "where the winner was not measured, the fastest measured takes over";
  const TuningGrid none =
      grid_of(Collective::kAllreduce, {{"direct", 1}}, {8}, {std::vector<double>{-1}});
  EXPECT_TRUE(tuning_rules(none, "host", "ranks=2 hosts=1").empty());
}

// A range ends where its algorithm stops: the one-shot kernels' 64 KB, not the next measured
// size; the next rule covers the gap, and the file reads back into the same choices.
TEST(TuningRules, RangesEndWhereTheirAlgorithmStopsAndReadBack) {
  const TuningGrid grid = grid_of(Collective::kAllreduce, {{"oneshot", 1}, {"twoshot", 1}},
                                  {8, 32 << 10, 256 << 10}, {{3.0, 5.0, -1}, {9.0, 12.0, 40.0}});
  const std::vector<std::string> rules = tuning_rules(grid, "cuda-device", "ranks=4 hosts=1");
  ASSERT_EQ(rules, (std::vector<std::string>{
                       "rule allreduce@cuda-device:0-65537=oneshot ranks=4 hosts=1 "
                       "us=8:3.00,32K:5.00",
                       "rule allreduce@cuda-device:65537-=twoshot ranks=4 hosts=1 us=256K:40.00"}));
  std::string text = "cohort-tuning 1\n";
  for (const std::string &line : tuning_comments(grid, "allreduce@cuda-device ranks=4 hosts=1")) {
    text += line + "\n";
  }
  for (const std::string &line : rules) text += line + "\n";
  Tuning t;
  ASSERT_EQ(parse_tuning(text, "t", &t), COHORT_SUCCESS) << last_error() << "\n" << text;
  Selection s;
  s.add_tuning(t);
  const auto device = COHORT_MEMORY_CUDA_DEVICE;
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 64 << 10, 4, 1, device), "oneshot (file)");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, (64 << 10) + 1, 4, 1, device), "twoshot (file)");
  EXPECT_EQ(chosen(s, Collective::kAllreduce, 8, 2, 1, device), "oneshot") << "defaults";
  EXPECT_NE(text.find("# [allreduce@cuda-device ranks=4 hosts=1] 256K: oneshot n/a, twoshot "
                      "40.00"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace cohort::coll
