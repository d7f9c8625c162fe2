// The one parameter registry: every COHORT_* environment variable has a row here with its
// type, default, unit and one-line doc; `cohort_info` prints the table with current values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cohort {

enum class ParamType { kBool, kInt, kDouble, kString, kEnum, kList };

inline constexpr double kNoMin = -1e300;
inline constexpr double kNoMax = 1e300;

// The values an int or double parameter takes: min through max, inclusive.
struct ParamRange {
  double min = kNoMin;
  double max = kNoMax;
  bool power_of_two = false;  // kInt only
};

struct ParamSpec {
  const char *name;  // without the COHORT_ prefix, e.g. "INIT_TIMEOUT"
  ParamType type;
  const char *default_value;  // as text, parsed like an env value
  const char *unit;           // "s", "" ...
  const char *choices;        // kEnum / kList: comma-separated allowed words
  ParamRange range;           // kInt / kDouble: the valid values
  const char *doc;
};

// A variable that Cohort's scripts read (contrib/, test/), not the library: known, so that it
// is not taken for a misspelt parameter, and listed by `cohort_info --params`.
struct ScriptVariable {
  const char *name;  // with the COHORT_ prefix; a trailing '*' stands for any ending
  const char *doc;
};

// What is wrong with one COHORT_* variable of the environment.
struct ParamProblem {
  std::string variable;  // COHORT_...
  std::string value;
  std::string message;  // says the rule, the valid values, or the likely intended name
};

// The user's parameters; testing_param_table() holds those only Cohort's tests set (fault
// injection), kept out of the user's table.
const std::vector<ParamSpec> &param_table();
const std::vector<ParamSpec> &testing_param_table();
const std::vector<ScriptVariable> &script_variable_table();
const ParamSpec *param_find(std::string_view name);
const char *param_type_name(ParamType type);

// The text in effect: the environment's COHORT_<name> if set, else the default.
std::string param_text(const ParamSpec &spec, bool *from_env = nullptr);

// Parsers over text (pure, unit-tested).  `what` names the source in error messages.
Status parse_bool(std::string_view what, std::string_view text, bool *out);
Status parse_int(std::string_view what, std::string_view text, const ParamRange &range,
                 int64_t *out);
Status parse_double(std::string_view what, std::string_view text, const ParamRange &range,
                    double *out);
inline Status parse_int(std::string_view what, std::string_view text, double min_value,
                        int64_t *out) {
  return parse_int(what, text, ParamRange{min_value}, out);
}
inline Status parse_double(std::string_view what, std::string_view text, double min_value,
                           double *out) {
  return parse_double(what, text, ParamRange{min_value}, out);
}
// Index of `text` (case-insensitive) among `choices`.
Status parse_enum(std::string_view what, std::string_view text, std::string_view choices, int *out);
// Bit i set for each listed choice i; "ALL" sets all; a leading '^' inverts the selection.
Status parse_list(std::string_view what, std::string_view text, std::string_view choices,
                  uint64_t *out);

// Typed getters: the effective value, or an error that names COHORT_<name> and its text.
Status param_bool(const char *name, bool *out);
Status param_int(const char *name, int64_t *out);
Status param_double(const char *name, double *out);
Status param_string(const char *name, std::string *out);
Status param_enum(const char *name, int *out);
Status param_list(const char *name, uint64_t *out);

// Every COHORT_* variable of the environment that is wrong: a value its parameter refuses, or a
// name that is no parameter (with the nearest one's name when there is a close one).
std::vector<ParamProblem> params_check_env();

// Validates every parameter set in the environment: the error names every bad value.  Unknown
// COHORT_* names are warned about, once per process, not refused.
Status params_validate_env();

}  // namespace cohort
