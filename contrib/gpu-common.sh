# Sourced by contrib/gpu-check.sh and contrib/multi-gpu-check.sh (bash), with $build set to the
# build (or packed carry) folder relative to the working directory.
# A libtool-linked program's real binary (.libs/ when it links libcohort.so).
binary() { if [ -x "$PWD/$build/$(dirname "$1")/.libs/$(basename "$1")" ]; then
  echo "$PWD/$build/$(dirname "$1")/.libs/$(basename "$1")"; else echo "$PWD/$build/$1"; fi; }
# Open MPI's PMIx prints a harmless plugin-load warning per process there; keep logs readable.
quiet() { grep -v -e 'pmix_mca_base_component_repository_open' -e 'dlopen error' -e 'Perhaps a missing symbol'; }
