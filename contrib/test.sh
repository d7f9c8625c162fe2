#!/bin/sh
# Sets up, builds and runs every test: unit tests (GoogleTest) and multi-rank tests (mpirun,
# oversubscribed), then the unit tests and a multi-rank subset again under ASan + UBSan.
# Ends with "N passed, N failed, N skipped"; exits non-zero if anything failed.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/setup-debian.sh"
"$top/contrib/build.sh" "$top/build" $("$top/contrib/local-arch.sh")
"$top/contrib/build.sh" "$top/build-asan" --enable-sanitizers --without-cuda
set +e
(cd "$top/build" && make -j2 check >check.out 2>&1)
plain=$?
# Open MPI's own allocations are not ours to judge: leaks off, errors abort.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
export COHORT_TEST_FILTER='^[24] (create|split|abort|bad-input|nonblocking)|missing --skip 0|stall --phase ready|^8 plan|plan-fails|plan-graph-file|^4 coll$|coll-missing'
(cd "$top/build-asan" && make -j2 check >check.out 2>&1)
asan=$?
exec "$top/contrib/summarize-tests.sh" "$top/build:$plain" "$top/build-asan:$asan"
