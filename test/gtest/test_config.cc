// Unit tests for team configuration and phases (src/team/config.*, src/team/phase.*).
#include <gtest/gtest.h>

#include "clean_env.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort.h"
#include "core/params.h"
#include "core/status.h"
#include "team/config.h"
#include "team/phase.h"

namespace cohort {
namespace {

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// The clean environment, plus config helpers.
class ConfigTest : public CleanEnvTest {
 protected:
  static cohort_team_config_t valid_config() {
    cohort_team_config_t config = COHORT_TEAM_CONFIG_INITIALIZER;
    return config;
  }

  // A TeamConfig whose every field differs from the defaults, to see what gets written.
  static TeamConfig junk() {
    TeamConfig c;
    c.init_timeout_s = -123;
    c.cuda_device = 77;
    c.allow_shared_gpu = true;
    c.name = "junk";
    c.inject.active = true;
    c.inject.rank = 99;
    return c;
  }

  // Expects COHORT_ERR_INVALID_ARG with a message naming `field`.
  static void expect_invalid(const cohort_team_config_t &config, const char *field) {
    TeamConfig out = junk();
    clear_last_error();
    EXPECT_EQ(resolve_config(&config, &out), COHORT_ERR_INVALID_ARG) << field;
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, field)) << message;
    // Still a usable timeout, so this rank can take part in check-in.
    EXPECT_TRUE(std::isfinite(out.init_timeout_s) && out.init_timeout_s > 0) << out.init_timeout_s;
  }
};

// ---------------------------------------------------------------- resolve_config

TEST_F(ConfigTest, NullConfigGivesDefaults) {
  TeamConfig out = junk();
  EXPECT_EQ(resolve_config(nullptr, &out), COHORT_SUCCESS) << cohort_last_error();
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 300.0);
  EXPECT_EQ(out.cuda_device, COHORT_DEVICE_CURRENT);
  EXPECT_FALSE(out.allow_shared_gpu);
  EXPECT_EQ(out.name, "team");
  EXPECT_FALSE(out.inject.active);
}

TEST_F(ConfigTest, InitializerGivesDefaults) {
  cohort_team_config_t config = valid_config();
  TeamConfig out = junk();
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS) << cohort_last_error();
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 300.0);
  EXPECT_EQ(out.cuda_device, COHORT_DEVICE_CURRENT);
  EXPECT_FALSE(out.allow_shared_gpu);
  EXPECT_EQ(out.name, "team");
  EXPECT_FALSE(out.inject.active);
}

TEST_F(ConfigTest, NullConfigTakesEnvironment) {
  set("COHORT_INIT_TIMEOUT", "12");
  set("COHORT_ALLOW_SHARED_GPU", "1");
  set("COHORT_INJECT_FAILURE", "local-ranks:3:stall");
  TeamConfig out = junk();
  EXPECT_EQ(resolve_config(nullptr, &out), COHORT_SUCCESS) << cohort_last_error();
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 12.0);
  EXPECT_TRUE(out.allow_shared_gpu);
  EXPECT_TRUE(out.inject.active);
  EXPECT_EQ(out.inject.phase, Phase::kLocalRanks);
  EXPECT_EQ(out.inject.rank, 3);
  EXPECT_TRUE(out.inject.stall);
}

TEST_F(ConfigTest, BadMagic) {
  cohort_team_config_t config = valid_config();
  config.magic = 0x1234;
  expect_invalid(config, "magic");
  EXPECT_TRUE(contains(cohort_last_error(), "0x1234")) << cohort_last_error();
  config.magic = 0;
  expect_invalid(config, "magic");
}

TEST_F(ConfigTest, SizeTooSmall) {
  cohort_team_config_t config = valid_config();
  config.size = sizeof(cohort_team_config_t) - 1;
  expect_invalid(config, "size");
  config.size = 0;
  expect_invalid(config, "size");
}

TEST_F(ConfigTest, LargerSizeAccepted) {
  cohort_team_config_t config = valid_config();
  config.size = sizeof(cohort_team_config_t) + 16;
  TeamConfig out;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS) << cohort_last_error();
}

TEST_F(ConfigTest, InitTimeoutZeroOrNaN) {
  cohort_team_config_t config = valid_config();
  config.init_timeout = 0;
  expect_invalid(config, "init_timeout");
  config.init_timeout = std::numeric_limits<double>::quiet_NaN();
  expect_invalid(config, "init_timeout");
}

TEST_F(ConfigTest, CudaDeviceBelowActive) {
  cohort_team_config_t config = valid_config();
  config.cuda_device = -5;
  expect_invalid(config, "cuda_device");
  EXPECT_TRUE(contains(cohort_last_error(), "-5")) << cohort_last_error();
  config.cuda_device = COHORT_DEVICE_ACTIVE - 1;
  expect_invalid(config, "cuda_device");
}

TEST_F(ConfigTest, CudaDeviceValidValues) {
  for (int device : {COHORT_DEVICE_ACTIVE, COHORT_DEVICE_NONE, COHORT_DEVICE_CURRENT, 0, 3}) {
    cohort_team_config_t config = valid_config();
    config.cuda_device = device;
    TeamConfig out = junk();
    EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS) << device;
    EXPECT_EQ(out.cuda_device, device);
  }
}

TEST_F(ConfigTest, AllowSharedGpuTwo) {
  cohort_team_config_t config = valid_config();
  config.allow_shared_gpu = 2;
  expect_invalid(config, "allow_shared_gpu");
}

TEST_F(ConfigTest, AllowSharedGpuConfigOverridesEnv) {
  set("COHORT_ALLOW_SHARED_GPU", "1");
  cohort_team_config_t config = valid_config();
  TeamConfig out;
  config.allow_shared_gpu = 0;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_FALSE(out.allow_shared_gpu);
  config.allow_shared_gpu = -1;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_TRUE(out.allow_shared_gpu);

  unsetenv("COHORT_ALLOW_SHARED_GPU");
  config.allow_shared_gpu = 1;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_TRUE(out.allow_shared_gpu);
}

TEST_F(ConfigTest, NameIsCopied) {
  cohort_team_config_t config = valid_config();
  config.name = "solver-team";
  TeamConfig out;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_EQ(out.name, "solver-team");
}

TEST_F(ConfigTest, BadEnvTimeoutNamesVariable) {
  set("COHORT_INIT_TIMEOUT", "abc");
  TeamConfig out = junk();
  clear_last_error();
  EXPECT_EQ(resolve_config(nullptr, &out), COHORT_ERR_INVALID_ARG);
  std::string message = cohort_last_error();
  EXPECT_TRUE(contains(message, "COHORT_INIT_TIMEOUT")) << message;
  EXPECT_TRUE(contains(message, "abc")) << message;
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 300.0);  // usable default for check-in
}

TEST_F(ConfigTest, BadEnvOtherVariablesNamed) {
  set("COHORT_ALLOW_SHARED_GPU", "perhaps");
  TeamConfig out;
  EXPECT_EQ(resolve_config(nullptr, &out), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_ALLOW_SHARED_GPU")) << cohort_last_error();
  unsetenv("COHORT_ALLOW_SHARED_GPU");

  set("COHORT_INJECT_FAILURE", "nowhere:1");
  EXPECT_EQ(resolve_config(nullptr, &out), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_INJECT_FAILURE")) << cohort_last_error();
  EXPECT_TRUE(contains(cohort_last_error(), "nowhere:1")) << cohort_last_error();
}

TEST_F(ConfigTest, ConfigTimeoutOverridesEnv) {
  set("COHORT_INIT_TIMEOUT", "12");
  cohort_team_config_t config = valid_config();
  config.init_timeout = 7.5;
  TeamConfig out;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 7.5);

  config.init_timeout = -1;  // negative: take the environment
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 12.0);

  unsetenv("COHORT_INIT_TIMEOUT");
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 300.0);
  config.init_timeout = 0.25;
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 0.25);
}

// ------------------------------------------------------- parse_injected_failure

TEST(ParseInjectedFailure, EmptyIsInactive) {
  InjectedFailure out;
  out.active = true;
  out.rank = 4;
  EXPECT_EQ(parse_injected_failure("", &out), COHORT_SUCCESS);
  EXPECT_FALSE(out.active);
  EXPECT_FALSE(out.stall);
}

TEST(ParseInjectedFailure, PhaseAndRank) {
  InjectedFailure out;
  EXPECT_EQ(parse_injected_failure("peer-info:2", &out), COHORT_SUCCESS);
  EXPECT_TRUE(out.active);
  EXPECT_EQ(out.phase, Phase::kPeerInfo);
  EXPECT_EQ(out.rank, 2);
  EXPECT_FALSE(out.stall);

  EXPECT_EQ(parse_injected_failure("check-in:15", &out), COHORT_SUCCESS);
  EXPECT_EQ(out.phase, Phase::kCheckIn);
  EXPECT_EQ(out.rank, 15);
}

TEST(ParseInjectedFailure, Stall) {
  InjectedFailure out;
  EXPECT_EQ(parse_injected_failure("ready:0:stall", &out), COHORT_SUCCESS);
  EXPECT_TRUE(out.active);
  EXPECT_EQ(out.phase, Phase::kReady);
  EXPECT_EQ(out.rank, 0);
  EXPECT_TRUE(out.stall);
}

TEST(ParseInjectedFailure, SkewOnlyInAlign) {
  InjectedFailure out;
  EXPECT_EQ(parse_injected_failure("align:3:skew", &out), COHORT_SUCCESS);
  EXPECT_EQ(out.phase, Phase::kAlign);
  EXPECT_EQ(out.rank, 3);
  EXPECT_TRUE(out.skew);
  EXPECT_FALSE(out.stall);
  EXPECT_EQ(parse_injected_failure("graphs:3:skew", &out), COHORT_ERR_INVALID_ARG);
}

TEST(ParseInjectedFailure, BadTextRejected) {
  for (const char *text :
       {"bogus:1", "peer-info", "peer-info:", "x:y:z", "peer-info:-1", "peer-info:2x",
        "peer-info:2:hang", "peer-info:2:stall:more", ":3", "peer-info:stall", "ready:1:skew"}) {
    InjectedFailure out;
    out.active = true;
    out.rank = 42;
    clear_last_error();
    EXPECT_EQ(parse_injected_failure(text, &out), COHORT_ERR_INVALID_ARG) << text;
    EXPECT_TRUE(out.active) << text;
    EXPECT_EQ(out.rank, 42) << text;
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, "COHORT_INJECT_FAILURE")) << message;
    EXPECT_TRUE(contains(message, std::string("'") + text + "'")) << message;
  }
}

TEST(ParseInjectedFailure, RankBeyondIntRangeRejected) {
  // A rank that does not fit an int must not wrap around to another rank.
  for (const char *text :
       {"peer-info:4294967296", "peer-info:2147483648", "peer-info:99999999999999999999"}) {
    InjectedFailure out;
    EXPECT_EQ(parse_injected_failure(text, &out), COHORT_ERR_INVALID_ARG)
        << text << " parsed as rank " << out.rank;
  }
}

// ------------------------------------------------------------------------ phases

TEST(PhaseNames, RoundTrip) {
  const char *expected[] = {"check-in", "peer-info", "local-ranks",  "topology", "graphs",
                            "align",    "connect",   "device-setup", "ready"};
  ASSERT_EQ(kNumPhases, 9);
  for (int i = 0; i < kNumPhases; ++i) {
    Phase phase = static_cast<Phase>(i);
    EXPECT_STREQ(phase_name(phase), expected[i]);
    Phase back = Phase::kCount;
    EXPECT_TRUE(phase_from_name(phase_name(phase), &back)) << expected[i];
    EXPECT_EQ(back, phase);
  }
}

TEST(PhaseNames, UnknownNames) {
  Phase phase = Phase::kLocalRanks;
  for (const char *name : {"", "bogus", "check", "ready ", "check-in:", "?"}) {
    EXPECT_FALSE(phase_from_name(name, &phase)) << name;
    EXPECT_EQ(phase, Phase::kLocalRanks) << name;
  }
  EXPECT_STREQ(phase_name(Phase::kCount), "?");
  EXPECT_STREQ(phase_name(static_cast<Phase>(-1)), "?");
}

// ------------------------------------------------------- cohort_team_config_init

TEST(TeamConfigInit, NullFails) {
  clear_last_error();
  EXPECT_EQ(cohort_team_config_init(nullptr), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "config")) << cohort_last_error();
}

TEST(TeamConfigInit, FillsDefaults) {
  cohort_team_config_t config;
  std::memset(&config, 0xab, sizeof(config));
  EXPECT_EQ(cohort_team_config_init(&config), COHORT_SUCCESS);
  EXPECT_EQ(config.size, sizeof(cohort_team_config_t));
  EXPECT_EQ(config.magic, COHORT_TEAM_CONFIG_MAGIC);
  EXPECT_LT(config.init_timeout, 0);
  EXPECT_EQ(config.cuda_device, COHORT_DEVICE_CURRENT);
  EXPECT_LT(config.allow_shared_gpu, 0);
  EXPECT_EQ(config.name, nullptr);
}

TEST_F(ConfigTest, InitializedConfigResolves) {
  cohort_team_config_t config;
  std::memset(&config, 0, sizeof(config));
  ASSERT_EQ(cohort_team_config_init(&config), COHORT_SUCCESS);
  set("COHORT_INIT_TIMEOUT", "42");
  TeamConfig out = junk();
  EXPECT_EQ(resolve_config(&config, &out), COHORT_SUCCESS) << cohort_last_error();
  EXPECT_DOUBLE_EQ(out.init_timeout_s, 42.0);
  EXPECT_EQ(out.cuda_device, COHORT_DEVICE_CURRENT);
  EXPECT_FALSE(out.allow_shared_gpu);
  EXPECT_EQ(out.name, "team");
}

}  // namespace
}  // namespace cohort
