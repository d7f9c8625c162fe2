// Test fixture: unsets every COHORT_* variable of the parameter tables (the user's and the
// testing one) for a test and restores the caller's values afterwards, so tests see defaults
// whatever the environment.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/params.h"
#include "core/status.h"

namespace cohort {

class CleanEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::vector<ParamSpec> *table : {&param_table(), &testing_param_table()}) {
      for (const ParamSpec &spec : *table) {
        std::string name = std::string("COHORT_") + spec.name;
        const char *value = getenv(name.c_str());
        saved_.emplace_back(name,
                            value != nullptr ? std::optional<std::string>(value) : std::nullopt);
        unsetenv(name.c_str());
      }
    }
    clear_last_error();
  }
  void TearDown() override {
    for (const auto &[name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  static void set(const char *name, const char *value) { setenv(name, value, 1); }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace cohort
