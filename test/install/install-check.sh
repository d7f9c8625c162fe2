#!/bin/sh
# TAP test: `make install` into a staging folder, then build C and C++ programs against the
# installed headers through cohort.pc and run them under mpirun.
# Environment (from Makefile.am): TOP_BUILDDIR, SRCDIR, MPIRUN, CC, CXX, MPI_CFLAGS, MPI_LIBS,
# SANITIZER_FLAGS (a sanitizer build's programs must link its runtime too).
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
echo "1..10"
n=0
result() {  # status description
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; sed 's/^/# /' "$stage/log"; fi
}
make -C "$TOP_BUILDDIR" install DESTDIR="$stage/root" >"$stage/log" 2>&1
result $? "make install"
prefix=$(sed -n 's/^prefix=//p' "$TOP_BUILDDIR/cohort.pc")
root=$stage/root$prefix
libdir=$(find "$root" -name 'libcohort.so.0' -printf '%h\n' | head -1)
{ test -f "$root/include/cohort.h" && test -f "$root/include/cohort_mpi.h" && test -f "$root/include/cohort.hpp" &&
  readelf -d "$libdir/libcohort.so.0" | grep -q 'SONAME.*libcohort.so.0' &&
  test -x "$root/bin/cohort_info" && test -x "$root/bin/cohort_perf"; } >"$stage/log" 2>&1
result $? "headers, libcohort.so.0 (soname), tools installed"
# The library's ABI is the C API: internal C++ symbols stay hidden.
nm -D --defined-only "$libdir/libcohort.so.0" | awk '{print $NF}' | grep -v '^cohort_' >"$stage/log" 2>&1
test ! -s "$stage/log" && nm -D --defined-only "$libdir/libcohort.so.0" | grep -q ' T cohort_allreduce$'
result $? "libcohort.so.0 exports cohort_* only"
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage/root"
flags=$(pkg-config --cflags --libs cohort 2>"$stage/log")
result $? "pkg-config cohort: $flags"
# shellcheck disable=SC2086
$CC -std=c99 -Wall -Wextra -Werror -o "$stage/hello_c" "$TOP_SRCDIR/examples/hello_cohort.c" $flags $MPI_CFLAGS $MPI_LIBS $SANITIZER_FLAGS >"$stage/log" 2>&1 &&
  LD_LIBRARY_PATH="$libdir" timeout 120 "$MPIRUN" -np 2 "$stage/hello_c" >>"$stage/log" 2>&1 </dev/null
result $? "C program (-std=c99 -Werror) builds against cohort.h and runs on 2 ranks"
# shellcheck disable=SC2086
$CXX -std=c++17 -Wall -Wextra -Werror -o "$stage/hello_cxx" "$SRCDIR/hello_team.cc" $flags $MPI_CFLAGS $MPI_LIBS $SANITIZER_FLAGS >"$stage/log" 2>&1 &&
  LD_LIBRARY_PATH="$libdir" timeout 120 "$MPIRUN" -np 3 "$stage/hello_cxx" >>"$stage/log" 2>&1 </dev/null
result $? "C++17 program builds against cohort.hpp and runs on 3 ranks"
LD_LIBRARY_PATH="$libdir" "$root/bin/cohort_info" >"$stage/log" 2>&1 && grep -q COHORT_INIT_TIMEOUT "$stage/log"
result $? "installed cohort_info lists the parameters"
# cohort.h needs no MPI (cohort_mpi.h has the MPI entry points).
printf '#include <cohort.h>\nint main(void) { cohort_unique_id_t id; return cohort_unique_id_create(&id) != COHORT_SUCCESS; }\n' >"$stage/nompi.c"
$CC -std=c99 -Wall -Wextra -Werror -fsyntax-only -I"$root/include" "$stage/nompi.c" >"$stage/log" 2>&1
result $? "cohort.h compiles without MPI's headers"
# libnccl.so.2 of Cohort (CUDA builds): its own folder, NVIDIA's soname, no MPI, no libcohort.
nccl=$(find "$root" -path '*/cohort/nccl/libnccl.so.2' | head -1)
if [ -z "$nccl" ] && ! grep -q "COHORT_HAVE_CUDA 1" "$TOP_BUILDDIR/src/core/build_info.h" 2>/dev/null; then
  n=$((n + 1)); echo "ok $n - libnccl.so.2 # SKIP built without CUDA"
else
  { test -n "$nccl" && readelf -d "$nccl" | grep -q 'SONAME.*\[libnccl.so.2\]' &&
    ! readelf -d "$nccl" | grep NEEDED | grep -q 'libmpi\|libcohort' &&
    test -f "$root/include/cohort/nccl/nccl.h"; } >"$stage/log" 2>&1
  result $? "lib/cohort/nccl/libnccl.so.2 (soname libnccl.so.2, no libmpi or libcohort needed) and its nccl.h"
fi
make -C "$TOP_BUILDDIR" uninstall DESTDIR="$stage/root" >"$stage/log" 2>&1 &&
  find "$stage/root" -type f >>"$stage/log" && ! find "$stage/root" -type f | grep -q .
result $? "make uninstall removes every installed file"
