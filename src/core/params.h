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

struct ParamSpec {
  const char *name;  // without the COHORT_ prefix, e.g. "INIT_TIMEOUT"
  ParamType type;
  const char *default_value;  // as text, parsed like an env value
  const char *unit;           // "s", "" ...
  const char *choices;        // kEnum / kList: comma-separated allowed words
  double min_value;           // kInt / kDouble: smallest valid value
  const char *doc;
};

// The user's parameters; testing_param_table() holds those only Cohort's tests set (fault
// injection), kept out of the user's table.
const std::vector<ParamSpec> &param_table();
const std::vector<ParamSpec> &testing_param_table();
const ParamSpec *param_find(std::string_view name);
const char *param_type_name(ParamType type);

// The text in effect: the environment's COHORT_<name> if set, else the default.
std::string param_text(const ParamSpec &spec, bool *from_env = nullptr);

// Parsers over text (pure, unit-tested).  `what` names the source in error messages.
Status parse_bool(std::string_view what, std::string_view text, bool *out);
Status parse_int(std::string_view what, std::string_view text, double min_value, int64_t *out);
Status parse_double(std::string_view what, std::string_view text, double min_value, double *out);
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

// Validates every parameter set in the environment; the first bad one is the error.
Status params_validate_env();

}  // namespace cohort
