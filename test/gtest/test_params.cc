// Unit tests for the parameter registry and its parsers (src/core/params.{h,cc}).
#include <gtest/gtest.h>

#include "clean_env.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/params.h"
#include "core/status.h"

namespace cohort {
namespace {

constexpr double kNoMin = -1e300;

using ParamsEnvTest = CleanEnvTest;

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// ------------------------------------------------------------------ parse_bool

TEST(ParseBool, TrueWordsAnyCase) {
  for (const char *text : {"1", "true", "TRUE", "True", "yes", "YES", "on", "On"}) {
    bool value = false;
    EXPECT_EQ(parse_bool("COHORT_B", text, &value), COHORT_SUCCESS) << text;
    EXPECT_TRUE(value) << text;
  }
}

TEST(ParseBool, FalseWordsAnyCase) {
  for (const char *text : {"0", "false", "FALSE", "no", "No", "off", "OFF"}) {
    bool value = true;
    EXPECT_EQ(parse_bool("COHORT_B", text, &value), COHORT_SUCCESS) << text;
    EXPECT_FALSE(value) << text;
  }
}

TEST(ParseBool, BadTextIsInvalidArgNamingVariableAndText) {
  for (const char *text : {"2", "", "tru", "enable", " 1", "yess", "-1"}) {
    clear_last_error();
    bool value = true;
    EXPECT_EQ(parse_bool("COHORT_SOME_FLAG", text, &value), COHORT_ERR_INVALID_ARG) << text;
    EXPECT_TRUE(value) << "output written on error for '" << text << "'";
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, "COHORT_SOME_FLAG")) << message;
    EXPECT_TRUE(contains(message, std::string("'") + text + "'")) << message;
  }
}

// ------------------------------------------------------------------- parse_int

TEST(ParseInt, ValidValues) {
  int64_t value = 0;
  EXPECT_EQ(parse_int("COHORT_I", "42", kNoMin, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 42);
  EXPECT_EQ(parse_int("COHORT_I", "-7", kNoMin, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, -7);
  EXPECT_EQ(parse_int("COHORT_I", "9223372036854775807", kNoMin, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, INT64_MAX);
}

TEST(ParseInt, MinValueIsInclusive) {
  int64_t value = -1;
  EXPECT_EQ(parse_int("COHORT_I", "0", 0, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(parse_int("COHORT_I", "5", 5, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 5);
}

TEST(ParseInt, BelowMinValueIsRejected) {
  int64_t value = 99;
  clear_last_error();
  EXPECT_EQ(parse_int("COHORT_COUNT", "-1", 0, &value), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(value, 99);
  std::string message = cohort_last_error();
  EXPECT_TRUE(contains(message, "COHORT_COUNT")) << message;
  EXPECT_TRUE(contains(message, "'-1'")) << message;
  EXPECT_TRUE(contains(message, "at least 0")) << message;

  EXPECT_EQ(parse_int("COHORT_COUNT", "4", 5, &value), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(value, 99);
}

TEST(ParseInt, BadTextIsRejected) {
  for (const char *text : {"", "abc", "12abc", "1.5", "0x", "99999999999999999999", "1e3"}) {
    int64_t value = 99;
    clear_last_error();
    EXPECT_EQ(parse_int("COHORT_COUNT", text, kNoMin, &value), COHORT_ERR_INVALID_ARG) << text;
    EXPECT_EQ(value, 99) << text;
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, "COHORT_COUNT")) << message;
    EXPECT_TRUE(contains(message, std::string("'") + text + "'")) << message;
  }
}

// ---------------------------------------------------------------- parse_double

TEST(ParseDouble, ValidValues) {
  double value = 0;
  EXPECT_EQ(parse_double("COHORT_D", "2.5", kNoMin, &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 2.5);
  EXPECT_EQ(parse_double("COHORT_D", "-3", kNoMin, &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, -3.0);
  EXPECT_EQ(parse_double("COHORT_D", "1e2", kNoMin, &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 100.0);
  EXPECT_EQ(parse_double("COHORT_D", "300", 0.001, &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 300.0);
}

TEST(ParseDouble, MinValueIsInclusive) {
  double value = 0;
  EXPECT_EQ(parse_double("COHORT_D", "0.001", 0.001, &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 0.001);
}

TEST(ParseDouble, BelowMinValueIsRejected) {
  double value = 7;
  clear_last_error();
  EXPECT_EQ(parse_double("COHORT_INIT_TIMEOUT", "0.0009", 0.001, &value), COHORT_ERR_INVALID_ARG);
  EXPECT_DOUBLE_EQ(value, 7);
  std::string message = cohort_last_error();
  EXPECT_TRUE(contains(message, "COHORT_INIT_TIMEOUT")) << message;
  EXPECT_TRUE(contains(message, "'0.0009'")) << message;
  EXPECT_TRUE(contains(message, "at least 0.001")) << message;

  EXPECT_EQ(parse_double("COHORT_INIT_TIMEOUT", "0", 0.001, &value), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(parse_double("COHORT_INIT_TIMEOUT", "-5", 0.001, &value), COHORT_ERR_INVALID_ARG);
  EXPECT_DOUBLE_EQ(value, 7);
}

TEST(ParseDouble, BadTextIsRejected) {
  for (const char *text : {"", "abc", "3s", "1.2.3", "nan", "inf", "-inf", "1e999"}) {
    double value = 7;
    clear_last_error();
    EXPECT_EQ(parse_double("COHORT_INIT_TIMEOUT", text, kNoMin, &value), COHORT_ERR_INVALID_ARG)
        << text;
    EXPECT_DOUBLE_EQ(value, 7) << text;
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, "COHORT_INIT_TIMEOUT")) << message;
    EXPECT_TRUE(contains(message, std::string("'") + text + "'")) << message;
  }
}

// ------------------------------------------------------------------ parse_enum

constexpr const char *kLevels = "NONE,WARN,INFO,TRACE";

TEST(ParseEnum, IndexOfChoiceAnyCase) {
  int value = -1;
  EXPECT_EQ(parse_enum("COHORT_DEBUG", "NONE", kLevels, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(parse_enum("COHORT_DEBUG", "warn", kLevels, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(parse_enum("COHORT_DEBUG", "Info", kLevels, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 2);
  EXPECT_EQ(parse_enum("COHORT_DEBUG", "tRaCe", kLevels, &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 3);
}

TEST(ParseEnum, ChoicesWithSpacesAreTrimmed) {
  int value = -1;
  EXPECT_EQ(parse_enum("COHORT_X", "beta", "alpha, beta , gamma", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(parse_enum("COHORT_X", "GAMMA", "alpha, beta , gamma", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 2);
}

TEST(ParseEnum, UnknownWordIsRejectedWithChoices) {
  for (const char *text : {"debug", "", "WARNING", "WAR", "1"}) {
    int value = 42;
    clear_last_error();
    EXPECT_EQ(parse_enum("COHORT_DEBUG", text, kLevels, &value), COHORT_ERR_INVALID_ARG) << text;
    EXPECT_EQ(value, 42) << text;
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, "COHORT_DEBUG")) << message;
    EXPECT_TRUE(contains(message, std::string("'") + text + "'")) << message;
    EXPECT_TRUE(contains(message, kLevels)) << message;
  }
}

// ------------------------------------------------------------------ parse_list

constexpr const char *kFour = "INIT,PARAM,OOB,TOPO";

uint64_t list_of(const char *text, const char *choices = kFour) {
  uint64_t value = 0xdeadbeef;
  Status s = parse_list("COHORT_L", text, choices, &value);
  EXPECT_EQ(s, COHORT_SUCCESS) << text << ": " << cohort_last_error();
  return value;
}

TEST(ParseList, SingleAndSeveralItems) {
  EXPECT_EQ(list_of("INIT"), 0x1u);
  EXPECT_EQ(list_of("TOPO"), 0x8u);
  EXPECT_EQ(list_of("OOB,TOPO"), 0xcu);
  EXPECT_EQ(list_of("PARAM,INIT"), 0x3u);
  EXPECT_EQ(list_of(" INIT , OOB "), 0x5u);
}

TEST(ParseList, CaseInsensitive) {
  EXPECT_EQ(list_of("init"), 0x1u);
  EXPECT_EQ(list_of("Oob,tOpO"), 0xcu);
}

TEST(ParseList, EmptyTextSelectsNothing) { EXPECT_EQ(list_of(""), 0u); }

TEST(ParseList, AllSelectsEveryChoice) {
  EXPECT_EQ(list_of("ALL"), 0xfu);
  EXPECT_EQ(list_of("all"), 0xfu);
  EXPECT_EQ(list_of("INIT,All"), 0xfu);
}

TEST(ParseList, CaretInverts) {
  EXPECT_EQ(list_of("^INIT"), 0xeu);
  EXPECT_EQ(list_of("^oob,TOPO"), 0x3u);
  EXPECT_EQ(list_of("^ALL"), 0u);
  EXPECT_EQ(list_of("^"), 0xfu);
}

TEST(ParseList, UnknownItemIsRejectedNamingItAndVariable) {
  for (const char *text : {"BOGUS", "INIT,BOGUS", "^BOGUS", "INIT;OOB"}) {
    uint64_t value = 77;
    clear_last_error();
    EXPECT_EQ(parse_list("COHORT_DEBUG_SUBSYS", text, kFour, &value), COHORT_ERR_INVALID_ARG)
        << text;
    EXPECT_EQ(value, 77u) << text;
    std::string message = cohort_last_error();
    EXPECT_TRUE(contains(message, "COHORT_DEBUG_SUBSYS")) << message;
    EXPECT_TRUE(contains(message, std::string("'") + text + "'")) << message;
  }
  clear_last_error();
  uint64_t value = 0;
  EXPECT_EQ(parse_list("COHORT_DEBUG_SUBSYS", "INIT,BOGUS", kFour, &value), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "'BOGUS'")) << cohort_last_error();
}

// The bits of COHORT_DEBUG_SUBSYS must be the LogSubsys bits the logger tests.
TEST(ParseList, DebugSubsysChoicesMatchLogBits) {
  const ParamSpec *spec = param_find("DEBUG_SUBSYS");
  ASSERT_NE(spec, nullptr);
  const std::pair<const char *, uint64_t> bits[] = {
      {"INIT", kLogINIT},   {"PARAM", kLogPARAM}, {"OOB", kLogOOB}, {"TOPO", kLogTOPO},
      {"GRAPH", kLogGRAPH}, {"COLL", kLogCOLL},   {"NET", kLogNET}};
  uint64_t every = 0;
  for (const auto &[word, bit] : bits) {
    EXPECT_EQ(list_of(word, spec->choices), bit) << word;
    every |= bit;
  }
  uint64_t all = list_of("ALL", spec->choices);
  EXPECT_EQ(all & every, every);
  EXPECT_EQ(list_of("^NET", spec->choices) & kLogNET, 0u);
  EXPECT_EQ(list_of("^NET", spec->choices) & (every & ~uint64_t{kLogNET}),
            every & ~uint64_t{kLogNET});
}

// ------------------------------------------------------------------ param_find

TEST(ParamFind, WithAndWithoutPrefix) {
  const ParamSpec *bare = param_find("INIT_TIMEOUT");
  const ParamSpec *prefixed = param_find("COHORT_INIT_TIMEOUT");
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare, prefixed);
  EXPECT_STREQ(bare->name, "INIT_TIMEOUT");
  EXPECT_EQ(bare->type, ParamType::kDouble);

  const ParamSpec *debug = param_find("COHORT_DEBUG");
  ASSERT_NE(debug, nullptr);
  EXPECT_STREQ(debug->name, "DEBUG");
  EXPECT_NE(debug, bare);
  // DEBUG is a prefix of DEBUG_SUBSYS / DEBUG_FILE: exact match only.
  EXPECT_STREQ(param_find("DEBUG_SUBSYS")->name, "DEBUG_SUBSYS");
}

TEST(ParamFind, UnknownNames) {
  EXPECT_EQ(param_find("NO_SUCH_PARAM"), nullptr);
  EXPECT_EQ(param_find("COHORT_NO_SUCH_PARAM"), nullptr);
  EXPECT_EQ(param_find(""), nullptr);
  EXPECT_EQ(param_find("COHORT_"), nullptr);
  EXPECT_EQ(param_find("COHORT_COHORT_INIT_TIMEOUT"), nullptr);
  EXPECT_EQ(param_find("INIT_TIMEOUTX"), nullptr);
  EXPECT_EQ(param_find("INIT_TIME"), nullptr);
}

// ---------------------------------------------------------------- typed getters

TEST_F(ParamsEnvTest, DoubleGetterDefaultAndEnv) {
  double value = -1;
  EXPECT_EQ(param_double("INIT_TIMEOUT", &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 300.0);

  set("COHORT_INIT_TIMEOUT", "12.5");
  EXPECT_EQ(param_double("INIT_TIMEOUT", &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 12.5);

  // An empty variable counts as unset.
  set("COHORT_INIT_TIMEOUT", "");
  EXPECT_EQ(param_double("INIT_TIMEOUT", &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 300.0);
}

TEST_F(ParamsEnvTest, DoubleGetterBadEnvNamesVariableAndText) {
  set("COHORT_INIT_TIMEOUT", "soon");
  double value = -1;
  EXPECT_EQ(param_double("INIT_TIMEOUT", &value), COHORT_ERR_INVALID_ARG);
  EXPECT_DOUBLE_EQ(value, -1);
  std::string message = cohort_last_error();
  EXPECT_TRUE(contains(message, "COHORT_INIT_TIMEOUT")) << message;
  EXPECT_TRUE(contains(message, "soon")) << message;

  set("COHORT_INIT_TIMEOUT", "0");
  EXPECT_EQ(param_double("INIT_TIMEOUT", &value), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_INIT_TIMEOUT")) << cohort_last_error();
}

TEST_F(ParamsEnvTest, BoolGetter) {
  bool value = true;
  EXPECT_EQ(param_bool("ALLOW_SHARED_GPU", &value), COHORT_SUCCESS);
  EXPECT_FALSE(value);
  set("COHORT_ALLOW_SHARED_GPU", "Yes");
  EXPECT_EQ(param_bool("ALLOW_SHARED_GPU", &value), COHORT_SUCCESS);
  EXPECT_TRUE(value);
  set("COHORT_ALLOW_SHARED_GPU", "maybe");
  EXPECT_EQ(param_bool("ALLOW_SHARED_GPU", &value), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_ALLOW_SHARED_GPU")) << cohort_last_error();
  EXPECT_TRUE(contains(cohort_last_error(), "maybe")) << cohort_last_error();
}

TEST_F(ParamsEnvTest, EnumGetter) {
  int value = -1;
  EXPECT_EQ(param_enum("DEBUG", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, static_cast<int>(LogLevel::kWarn));
  set("COHORT_DEBUG", "trace");
  EXPECT_EQ(param_enum("DEBUG", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, static_cast<int>(LogLevel::kTrace));
  set("COHORT_DEBUG", "none");
  EXPECT_EQ(param_enum("DEBUG", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, static_cast<int>(LogLevel::kNone));
  set("COHORT_DEBUG", "loud");
  EXPECT_EQ(param_enum("DEBUG", &value), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_DEBUG")) << cohort_last_error();
  EXPECT_TRUE(contains(cohort_last_error(), "loud")) << cohort_last_error();
}

TEST_F(ParamsEnvTest, ListGetter) {
  uint64_t all = 0;
  EXPECT_EQ(param_list("DEBUG_SUBSYS", &all), COHORT_SUCCESS);
  uint64_t every_log_bit =
      kLogINIT | kLogPARAM | kLogOOB | kLogTOPO | kLogGRAPH | kLogCOLL | kLogNET;
  EXPECT_EQ(all & every_log_bit, every_log_bit);

  uint64_t value = 0;
  set("COHORT_DEBUG_SUBSYS", "init,coll");
  EXPECT_EQ(param_list("DEBUG_SUBSYS", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, uint64_t{kLogINIT | kLogCOLL});

  set("COHORT_DEBUG_SUBSYS", "^NET");
  EXPECT_EQ(param_list("DEBUG_SUBSYS", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, all & ~uint64_t{kLogNET});

  set("COHORT_DEBUG_SUBSYS", "INIT,FOO");
  EXPECT_EQ(param_list("DEBUG_SUBSYS", &value), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_DEBUG_SUBSYS")) << cohort_last_error();
  EXPECT_TRUE(contains(cohort_last_error(), "FOO")) << cohort_last_error();
}

TEST_F(ParamsEnvTest, StringGetterAndParamText) {
  std::string value = "stale";
  EXPECT_EQ(param_string("HOST_ID", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, "");
  const ParamSpec *spec = param_find("HOST_ID");
  ASSERT_NE(spec, nullptr);
  bool from_env = true;
  EXPECT_EQ(param_text(*spec, &from_env), "");
  EXPECT_FALSE(from_env);

  set("COHORT_HOST_ID", "fake-node-3");
  EXPECT_EQ(param_string("HOST_ID", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, "fake-node-3");
  EXPECT_EQ(param_text(*spec, &from_env), "fake-node-3");
  EXPECT_TRUE(from_env);
}

TEST_F(ParamsEnvTest, ParamTextFallsBackToDefault) {
  const ParamSpec *spec = param_find("INIT_TIMEOUT");
  ASSERT_NE(spec, nullptr);
  bool from_env = true;
  EXPECT_EQ(param_text(*spec, &from_env), "300");
  EXPECT_FALSE(from_env);
  set("COHORT_INIT_TIMEOUT", "4");
  EXPECT_EQ(param_text(*spec, &from_env), "4");
  EXPECT_TRUE(from_env);
}

TEST_F(ParamsEnvTest, GettersAcceptPrefixedName) {
  set("COHORT_INIT_TIMEOUT", "9");
  double value = 0;
  EXPECT_EQ(param_double("COHORT_INIT_TIMEOUT", &value), COHORT_SUCCESS);
  EXPECT_DOUBLE_EQ(value, 9.0);
}

TEST_F(ParamsEnvTest, WrongTypeOrUnknownNameIsInternalError) {
  int64_t i = 5;
  EXPECT_EQ(param_int("INIT_TIMEOUT", &i), COHORT_ERR_INTERNAL);
  EXPECT_EQ(i, 5);
  EXPECT_TRUE(contains(cohort_last_error(), "INIT_TIMEOUT")) << cohort_last_error();
  bool b = true;
  EXPECT_EQ(param_bool("NO_SUCH_PARAM", &b), COHORT_ERR_INTERNAL);
  EXPECT_TRUE(b);
  EXPECT_TRUE(contains(cohort_last_error(), "NO_SUCH_PARAM")) << cohort_last_error();
  std::string s;
  EXPECT_EQ(param_string("DEBUG", &s), COHORT_ERR_INTERNAL);
}

// ---------------------------------------------------------- params_validate_env

TEST_F(ParamsEnvTest, ValidateEnvCleanEnvironment) {
  EXPECT_EQ(params_validate_env(), COHORT_SUCCESS);
  set("COHORT_INIT_TIMEOUT", "30");
  set("COHORT_DEBUG", "info");
  set("COHORT_DEBUG_SUBSYS", "^COLL");
  set("COHORT_ALLOW_SHARED_GPU", "off");
  set("COHORT_HOST_ID", "anything: goes");
  EXPECT_EQ(params_validate_env(), COHORT_SUCCESS) << cohort_last_error();
}

TEST_F(ParamsEnvTest, ValidateEnvCatchesBadInitTimeout) {
  set("COHORT_INIT_TIMEOUT", "abc");
  clear_last_error();
  EXPECT_EQ(params_validate_env(), COHORT_ERR_INVALID_ARG);
  std::string message = cohort_last_error();
  EXPECT_TRUE(contains(message, "COHORT_INIT_TIMEOUT")) << message;
  EXPECT_TRUE(contains(message, "abc")) << message;
}

TEST_F(ParamsEnvTest, ValidateEnvCatchesOtherTypes) {
  set("COHORT_DEBUG", "chatty");
  EXPECT_EQ(params_validate_env(), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_DEBUG")) << cohort_last_error();
  unsetenv("COHORT_DEBUG");

  set("COHORT_ALLOW_SHARED_GPU", "2");
  EXPECT_EQ(params_validate_env(), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_ALLOW_SHARED_GPU")) << cohort_last_error();
  unsetenv("COHORT_ALLOW_SHARED_GPU");

  set("COHORT_DEBUG_SUBSYS", "^NOPE");
  EXPECT_EQ(params_validate_env(), COHORT_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(cohort_last_error(), "COHORT_DEBUG_SUBSYS")) << cohort_last_error();
}

TEST_F(ParamsEnvTest, ValidateEnvNamesEveryBadValue) {
  set("COHORT_INIT_TIMEOUT", "-1");
  set("COHORT_SHM_MAILBOX_BYTES", "1000");
  EXPECT_EQ(params_validate_env(), COHORT_ERR_INVALID_ARG);
  std::string message = cohort_last_error();
  EXPECT_TRUE(contains(message, "COHORT_INIT_TIMEOUT='-1'")) << message;
  EXPECT_TRUE(contains(message, "COHORT_SHM_MAILBOX_BYTES='1000'")) << message;
  EXPECT_TRUE(contains(message, "a power of two")) << message;
}

// ------------------------------------------------------------ params_check_env

// Sets a COHORT_* variable the tables do not know for one test.
class UnknownVariable {
 public:
  UnknownVariable(const char *name, const char *value) : name_(name) { setenv(name, value, 1); }
  ~UnknownVariable() { unsetenv(name_); }

 private:
  const char *name_;
};

const ParamProblem *problem_of(const std::vector<ParamProblem> &problems, const char *variable) {
  for (const ParamProblem &p : problems) {
    if (p.variable == variable) return &p;
  }
  return nullptr;
}

TEST_F(ParamsEnvTest, CheckEnvListsEachBadValueWithItsRange) {
  set("COHORT_SHM_MAILBOX_BYTES", "1000");
  set("COHORT_COLL_TIMEOUT", "1e9");
  set("COHORT_SEARCH_BUDGET", "lots");
  set("COHORT_DEBUG", "INFO");  // valid: not listed
  std::vector<ParamProblem> problems = params_check_env();
  ASSERT_EQ(problems.size(), 3u);
  const ParamProblem *mailbox = problem_of(problems, "COHORT_SHM_MAILBOX_BYTES");
  ASSERT_NE(mailbox, nullptr);
  EXPECT_EQ(mailbox->value, "1000");
  EXPECT_EQ(mailbox->message, "must be an integer from 64 to 1073741824, a power of two");
  const ParamProblem *timeout = problem_of(problems, "COHORT_COLL_TIMEOUT");
  ASSERT_NE(timeout, nullptr);
  EXPECT_EQ(timeout->message, "must be a number from 0.001 to 604800");
  const ParamProblem *budget = problem_of(problems, "COHORT_SEARCH_BUDGET");
  ASSERT_NE(budget, nullptr);
  EXPECT_TRUE(contains(budget->message, "expected an integer from 1 to")) << budget->message;
  EXPECT_TRUE(std::is_sorted(
      problems.begin(), problems.end(),
      [](const ParamProblem &a, const ParamProblem &b) { return a.variable < b.variable; }));
}

TEST_F(ParamsEnvTest, PowerOfTwoBoundsAreInclusive) {
  int64_t value = 0;
  set("COHORT_SHM_MAILBOX_BYTES", "64");
  EXPECT_EQ(param_int("SHM_MAILBOX_BYTES", &value), COHORT_SUCCESS);
  set("COHORT_SHM_MAILBOX_BYTES", "1073741824");
  EXPECT_EQ(param_int("SHM_MAILBOX_BYTES", &value), COHORT_SUCCESS);
  EXPECT_EQ(value, 1 << 30);
  set("COHORT_SHM_MAILBOX_BYTES", "2147483648");
  EXPECT_EQ(param_int("SHM_MAILBOX_BYTES", &value), COHORT_ERR_INVALID_ARG);
  set("COHORT_SHM_MAILBOX_BYTES", "32");
  EXPECT_EQ(param_int("SHM_MAILBOX_BYTES", &value), COHORT_ERR_INVALID_ARG);
  EXPECT_EQ(value, 1 << 30);
}

TEST_F(ParamsEnvTest, UnknownNameGetsTheNearestParameter) {
  UnknownVariable typo("COHORT_DEBGU", "INFO");
  UnknownVariable far("COHORT_ZZZZZZZZZZZZZZZZZZ", "1");
  std::vector<ParamProblem> problems = params_check_env();
  const ParamProblem *near = problem_of(problems, "COHORT_DEBGU");
  ASSERT_NE(near, nullptr);
  EXPECT_TRUE(contains(near->message, "did you mean COHORT_DEBUG?")) << near->message;
  const ParamProblem *other = problem_of(problems, "COHORT_ZZZZZZZZZZZZZZZZZZ");
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(contains(other->message, "did you mean")) << other->message;
  EXPECT_TRUE(contains(other->message, "no such Cohort parameter")) << other->message;
  // Unknown names are warned about in a job, not refused.
  EXPECT_EQ(params_validate_env(), COHORT_SUCCESS) << cohort_last_error();
}

// A name cut short or run long at a word boundary, from either end, names the parameters it
// shares those words with, however far apart they are by edit distance.
TEST_F(ParamsEnvTest, UnknownNameSharingWholeWordsNamesTheParameters) {
  const struct {
    const char *typed;
    const char *meant;
  } cases[] = {{"COHORT_SHM_MAILBOX", "COHORT_SHM_MAILBOX_BYTES"},
               {"COHORT_COLL_ALGORITHM", "COHORT_COLL_ALGO"},
               {"COHORT_DEBUG_LEVEL", "COHORT_DEBUG"},
               {"COHORT_P2P", "COHORT_P2P_LEVEL"},
               {"COHORT_ALGO", "COHORT_COLL_ALGO"}};
  for (const auto &c : cases) {
    UnknownVariable typo(c.typed, "1");
    std::vector<ParamProblem> problems = params_check_env();
    const ParamProblem *p = problem_of(problems, c.typed);
    ASSERT_NE(p, nullptr) << c.typed;
    EXPECT_TRUE(contains(p->message, "did you mean ")) << c.typed << ": " << p->message;
    EXPECT_TRUE(contains(p->message, std::string(c.meant) + "?") ||
                contains(p->message, std::string(c.meant) + " or"))
        << c.typed << ": " << p->message;
  }
}

TEST_F(ParamsEnvTest, ScriptVariablesAreNotProblems) {
  UnknownVariable prefix("COHORT_PREFIX", "/opt/cohort");
  UnknownVariable test("COHORT_TEST_SOMETHING_NEW", "x");
  std::vector<ParamProblem> problems = params_check_env();
  EXPECT_EQ(problem_of(problems, "COHORT_PREFIX"), nullptr);
  EXPECT_EQ(problem_of(problems, "COHORT_TEST_SOMETHING_NEW"), nullptr);
  for (const ScriptVariable &v : script_variable_table()) {
    EXPECT_EQ(param_find(v.name), nullptr) << v.name << " is also a library parameter";
  }
}

// ----------------------------------------------------------------- the table

TEST(ParamTable, RowsAreDocumentedAndDefaultsParse) {
  const std::vector<ParamSpec> &table = param_table();
  ASSERT_FALSE(table.empty());
  std::set<std::string> names;
  for (const ParamSpec &spec : table) {
    ASSERT_NE(spec.name, nullptr);
    std::string name = spec.name;
    SCOPED_TRACE(name);
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name.rfind("COHORT_", 0), 0u) << "name carries the prefix";
    EXPECT_TRUE(names.insert(name).second) << "duplicate row";
    EXPECT_EQ(param_find(name), &spec);
    ASSERT_NE(spec.doc, nullptr);
    EXPECT_GT(std::string(spec.doc).size(), 0u);
    ASSERT_NE(spec.default_value, nullptr);
    ASSERT_NE(spec.unit, nullptr);
    ASSERT_NE(spec.choices, nullptr);
    std::string what = "COHORT_" + name;
    Status s = COHORT_SUCCESS;
    switch (spec.type) {
      case ParamType::kBool: {
        bool b;
        s = parse_bool(what, spec.default_value, &b);
        break;
      }
      case ParamType::kInt: {
        int64_t i;
        s = parse_int(what, spec.default_value, spec.range, &i);
        break;
      }
      case ParamType::kDouble: {
        double d;
        s = parse_double(what, spec.default_value, spec.range, &d);
        break;
      }
      case ParamType::kEnum: {
        EXPECT_GT(std::string(spec.choices).size(), 0u);
        int e;
        s = parse_enum(what, spec.default_value, spec.choices, &e);
        break;
      }
      case ParamType::kList: {
        EXPECT_GT(std::string(spec.choices).size(), 0u);
        uint64_t m;
        s = parse_list(what, spec.default_value, spec.choices, &m);
        break;
      }
      case ParamType::kString: break;
    }
    EXPECT_EQ(s, COHORT_SUCCESS) << "default '" << spec.default_value
                                 << "' does not parse: " << cohort_last_error();
  }
}

TEST(ParamTable, TypeNamesAreDistinct) {
  std::set<std::string> seen;
  for (ParamType type : {ParamType::kBool, ParamType::kInt, ParamType::kDouble, ParamType::kString,
                         ParamType::kEnum, ParamType::kList}) {
    std::string name = param_type_name(type);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(seen.insert(name).second) << name;
  }
  EXPECT_STREQ(param_type_name(ParamType::kDouble), "double");
  EXPECT_STREQ(param_type_name(ParamType::kBool), "bool");
}

}  // namespace
}  // namespace cohort
