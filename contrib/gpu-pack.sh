#!/bin/sh
# Packs what contrib/gpu-check.sh needs from a CUDA build into a small folder to carry to the
# GPU machine (a whole build folder with its objects is too big to carry):
#   contrib/gpu-pack.sh BUILD_DIR CARRY_DIR
# BUILD_DIR must be built (make, plus the test programs: make -C BUILD_DIR check TESTS= builds
# them without running them) and installed (make -C BUILD_DIR install).  Also builds
# extra/{ctest,ftest,bench,overhead,cache}, test/ompi's programs, with mpicc / mpifort.
set -e
build=$(cd "${1:?usage: contrib/gpu-pack.sh BUILD_DIR CARRY_DIR}" && pwd)
carry=${2:?usage: contrib/gpu-pack.sh BUILD_DIR CARRY_DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
ompi=$top/test/ompi
mkdir -p "$build/extra"
mpicc -std=c99 -O1 -o "$build/extra/ctest" "$ompi/coll_component_test.c" "$ompi/coll_component_device.c" -ldl
mpifort -o "$build/extra/ftest" "$ompi/coll_component_test.f90" "$ompi/coll_component_device.c"
mpicc -std=c99 -O2 -o "$build/extra/bench" "$ompi/coll_component_bench.c"
mpicc -std=c99 -O2 -o "$build/extra/overhead" "$ompi/component_overhead.c" -I"$top/include" \
  -L"$build/src/.libs" -lcohort -ldl
mpicc -std=c99 -O2 -o "$build/extra/cache" "$ompi/component_cache.c" \
  "$ompi/coll_component_device.c" -ldl
rm -rf "$carry"
mkdir -p "$carry"
cd "$build"
for f in tools/cohort_perf tools/cohort_info test/gtest/unit_tests test/mpi/gpu_test \
  test/mpi/team_test test/mpi/failure_test test/mpi/transport_test test/mpi/coll_random test/mpi/p2p_random test/gpu/kernel_test test/gpu/staged_test \
  test/gpu/kernel_bench test/nccl/nccl_api_test test/nccl/call_overhead test/socket/unique_id_test; do
  [ -e "$f" ] || { echo "gpu-pack: $build/$f is missing (make check TESTS= builds it)" >&2; exit 1; }
  mkdir -p "$carry/$(dirname "$f")"
  cp "$f" "$carry/$f"
  lib=$(dirname "$f")/.libs/$(basename "$f")
  if [ -e "$lib" ]; then
    mkdir -p "$carry/$(dirname "$lib")"
    cp "$lib" "$carry/$lib"
  fi
done
mkdir -p "$carry/src/.libs" "$carry/src/nccl/.libs" "$carry/_install/lib/cohort/openmpi" "$carry/extra"
cp -P src/.libs/libcohort.so* "$carry/src/.libs/"
cp -P src/nccl/.libs/libnccl.so* "$carry/src/nccl/.libs/"
cp _install/lib/cohort/openmpi/mca_coll_cohort.so "$carry/_install/lib/cohort/openmpi/"
cp extra/ctest extra/ftest extra/bench extra/overhead extra/cache "$carry/extra/"
find "$carry" -type f -exec sh -c 'file "$1" | grep -q ELF && strip --strip-debug "$1"' _ {} \;
du -sh "$carry"
