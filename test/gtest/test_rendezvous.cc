// The unique id's rendezvous: interface filters as NCCL_SOCKET_IFNAME reads them, ids that
// expire and close the listener, ids that are not Cohort's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>

#include "clean_env.h"
#include "core/rendezvous.h"
#include "core/socket_io.h"

namespace cohort {
namespace {

TEST(InterfaceFilter, PrefixesExclusionsAndExactNames) {
  EXPECT_TRUE(interface_matches("eth", "eth0"));
  EXPECT_TRUE(interface_matches("ib,eth", "eth1"));
  EXPECT_FALSE(interface_matches("ib", "eth0"));
  EXPECT_FALSE(interface_matches("^eth,lo", "eth0"));
  EXPECT_FALSE(interface_matches("^eth,lo", "lo"));
  EXPECT_TRUE(interface_matches("^eth,lo", "ib0"));
  EXPECT_TRUE(interface_matches("=eth0", "eth0"));
  EXPECT_FALSE(interface_matches("=eth0", "eth01"));
  EXPECT_FALSE(interface_matches("^=eth0", "eth0"));
  EXPECT_TRUE(interface_matches("^=eth0", "eth01"));
  EXPECT_FALSE(interface_matches("", "eth0"));
}

class RendezvousTest : public CleanEnvTest {};

TEST_F(RendezvousTest, FilterThatMatchesNothingIsNamed) {
  setenv("COHORT_SOCKET_IFNAME", "=no-such-interface", 1);
  cohort_unique_id_t id;
  EXPECT_EQ(unique_id_create(&id), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("COHORT_SOCKET_IFNAME==no-such-interface"), std::string::npos)
      << last_error();
}

TEST_F(RendezvousTest, NcclFilterIsReadWhenCohortsIsUnset) {
  setenv("NCCL_SOCKET_IFNAME", "=no-such-interface", 1);
  cohort_unique_id_t id;
  EXPECT_EQ(unique_id_create(&id), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("NCCL_SOCKET_IFNAME"), std::string::npos) << last_error();
  unsetenv("NCCL_SOCKET_IFNAME");
}

TEST_F(RendezvousTest, UnusedIdExpiresAndClosesTheListener) {
  setenv("COHORT_INIT_TIMEOUT", "0.2", 1);
  cohort_unique_id_t id;
  ASSERT_EQ(unique_id_create(&id), COHORT_SUCCESS) << last_error();
  EXPECT_TRUE(unique_id_listening());
  UniqueIdWire wire;
  ASSERT_EQ(unique_id_parse(id, &wire), COHORT_SUCCESS);
  EXPECT_NE(wire.port, 0);
  usleep(300000);
  EXPECT_FALSE(unique_id_listening());
  EXPECT_FALSE(unique_id_claim(wire.token));  // expired: no process serves it any more
}

TEST_F(RendezvousTest, ClaimedOnceByItsCreator) {
  cohort_unique_id_t id;
  ASSERT_EQ(unique_id_create(&id), COHORT_SUCCESS) << last_error();
  UniqueIdWire wire;
  ASSERT_EQ(unique_id_parse(id, &wire), COHORT_SUCCESS);
  EXPECT_TRUE(unique_id_claim(wire.token));
  EXPECT_FALSE(unique_id_claim(wire.token));
  unique_id_release(wire.token);
  EXPECT_FALSE(unique_id_listening());
}

TEST_F(RendezvousTest, ForeignBytesAreRefused) {
  cohort_unique_id_t id;
  std::memset(&id, 0x11, sizeof(id));
  UniqueIdWire wire;
  EXPECT_EQ(unique_id_parse(id, &wire), COHORT_ERR_INVALID_ARG);
  ASSERT_EQ(unique_id_create(&id), COHORT_SUCCESS) << last_error();
  id.internal[4] = 9;  // the format version
  EXPECT_EQ(unique_id_parse(id, &wire), COHORT_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("format version"), std::string::npos) << last_error();
}

}  // namespace
}  // namespace cohort
