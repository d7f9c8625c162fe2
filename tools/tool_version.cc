#include "tool_version.h"

#include <cstdio>
#include <cstring>

#include "core/build_info_text.h"

namespace cohort::tools {

bool asks_version(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--version") == 0) return true;
  }
  return false;
}

void print_version(const char *tool) {
  printf("%s: %s", tool, cohort::build_description().c_str());
}

}  // namespace cohort::tools
