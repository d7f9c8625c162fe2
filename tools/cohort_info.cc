// cohort_info: version, build configuration, every parameter with its current value, and
// (with --device-check) a kernel run on each visible GPU.  Needs no MPI job.
#include <getopt.h>

#include <cstdio>
#include <string>

#include "core/build_info.h"
#include "core/build_info_text.h"
#include "core/params.h"
#include "kernels/device_check.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

void usage(FILE *out) {
  fprintf(out,
          "usage: cohort_info [--build] [--params] [--device-check]\n"
          "  --build         version and build configuration\n"
          "  --params        every COHORT_* parameter: type, default, current value, doc\n"
          "  --device-check  launch a verify kernel on every visible GPU\n"
          "With no option: --build and --params.\n");
}

void print_params() {
  printf("Parameters (environment variable, type, default, current value):\n");
  for (const cohort::ParamSpec &spec : cohort::param_table()) {
    bool from_env = false;
    std::string value = cohort::param_text(spec, &from_env);
    printf("  COHORT_%-18s %-6s default=%-6s value=%s%s%s\n", spec.name,
           cohort::param_type_name(spec.type), spec.default_value[0] ? spec.default_value : "\"\"",
           value.empty() ? "\"\"" : value.c_str(), spec.unit[0] ? " " : "", spec.unit);
    if (spec.choices[0]) printf("      choices: %s\n", spec.choices);
    printf("      %s\n", spec.doc);
  }
  if (cohort::is_error(cohort::params_validate_env())) {
    printf("  invalid setting: %s\n", cohort::last_error().c_str());
  }
}

int device_check() {
#if COHORT_HAVE_CUDA
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    printf("device check: no CUDA device visible (%s)\n",
           err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
    return 2;
  }
  int failures = 0;
  for (int d = 0; d < count; ++d) {
    cohort::DeviceCheckResult result;
    if (cohort::is_error(cohort::device_self_check(d, 1 << 24, &result))) {
      printf("device %d: FAILED: %s\n", d, cohort::last_error().c_str());
      ++failures;
      continue;
    }
    printf("device %d: %s sm_%d%d: verify kernel over 16M values ok (%.3f ms)\n", d,
           result.name.c_str(), result.sm_major, result.sm_minor, result.kernel_ms);
  }
  return failures == 0 ? 0 : 1;
#else
  printf("device check: this Cohort was built without CUDA\n");
  return 2;
#endif
}

}  // namespace

int main(int argc, char **argv) {
  bool build = false, params = false, device = false;
  static const option options[] = {{"build", no_argument, nullptr, 'b'},
                                   {"params", no_argument, nullptr, 'p'},
                                   {"device-check", no_argument, nullptr, 'd'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "bpdh", options, nullptr)) != -1) {
    switch (c) {
      case 'b': build = true; break;
      case 'p': params = true; break;
      case 'd': device = true; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "cohort_info: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 1;
  }
  if (!build && !params && !device) build = params = true;
  if (build) printf("%s", cohort::build_description().c_str());
  if (params) print_params();
  return device ? device_check() : 0;
}
