// Unit tests for COHORT_DEBUG_FILE pattern expansion (src/core/log.*).
#include <gtest/gtest.h>

#include <string>

#include "core/log.h"

namespace cohort {
namespace {

TEST(LogExpandPath, HostAndPid) {
  EXPECT_EQ(log_expand_path("/tmp/cohort-%h-%p.log", "node7", 4242), "/tmp/cohort-node7-4242.log");
  EXPECT_EQ(log_expand_path("%h", "gpu-a", 1), "gpu-a");
  EXPECT_EQ(log_expand_path("%p", "gpu-a", 0), "0");
  EXPECT_EQ(log_expand_path("%p", "gpu-a", 4194304), "4194304");
}

TEST(LogExpandPath, RepeatedAndAdjacentDirectives) {
  EXPECT_EQ(log_expand_path("%h%h.%p%p", "n", 12), "nn.1212");
  EXPECT_EQ(log_expand_path("%p/%h/%p", "host", 5), "5/host/5");
}

TEST(LogExpandPath, DoublePercentIsLiteral) {
  EXPECT_EQ(log_expand_path("100%%", "n", 1), "100%");
  EXPECT_EQ(log_expand_path("%%", "n", 1), "%");
  // "%%h" is a literal percent then 'h', not the host.
  EXPECT_EQ(log_expand_path("a%%h", "node", 1), "a%h");
  EXPECT_EQ(log_expand_path("a%%p", "node", 99), "a%p");
  EXPECT_EQ(log_expand_path("%%%h", "node", 1), "%node");
  EXPECT_EQ(log_expand_path("%%%%", "node", 1), "%%");
}

TEST(LogExpandPath, TrailingPercentIsKept) {
  EXPECT_EQ(log_expand_path("log%", "n", 1), "log%");
  EXPECT_EQ(log_expand_path("%", "n", 1), "%");
  EXPECT_EQ(log_expand_path("a%%%", "n", 1), "a%%");
  EXPECT_EQ(log_expand_path("%p%", "n", 3), "3%");
}

TEST(LogExpandPath, UnknownDirectiveKeptLiterally) {
  EXPECT_EQ(log_expand_path("a%xb", "n", 1), "a%xb");
  EXPECT_EQ(log_expand_path("%H-%P", "n", 1), "%H-%P");
  EXPECT_EQ(log_expand_path("%x%h", "node", 1), "%xnode");
  EXPECT_EQ(log_expand_path("%d.log", "node", 1), "%d.log");
}

TEST(LogExpandPath, PlainTextUnchanged) {
  EXPECT_EQ(log_expand_path("", "n", 1), "");
  EXPECT_EQ(log_expand_path("/var/log/cohort.log", "n", 1), "/var/log/cohort.log");
  EXPECT_EQ(log_expand_path("h p", "n", 1), "h p");
}

TEST(LogExpandPath, HostTextIsInsertedVerbatim) {
  // A host containing '%' is not expanded again.
  EXPECT_EQ(log_expand_path("[%h]", "we%pird", 7), "[we%pird]");
  EXPECT_EQ(log_expand_path("[%h]", "", 7), "[]");
}

}  // namespace
}  // namespace cohort
