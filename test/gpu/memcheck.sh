#!/bin/sh
# compute-sanitizer's memcheck and racecheck over kernel_test's quick cases (make memcheck).
# usage: memcheck.sh [KERNEL_TEST]   (COMPUTE_SANITIZER overrides the tool's path)
# Needs a GPU; exits 77 without one, like kernel_test.
test_bin=${1:-./kernel_test}
sanitizer=${COMPUTE_SANITIZER:-compute-sanitizer}
if ! command -v "$sanitizer" >/dev/null 2>&1; then
  for dir in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer; do
    [ -x "$dir/compute-sanitizer" ] && sanitizer=$dir/compute-sanitizer && break
  done
fi
"$test_bin" --quick --dtype int8 >/dev/null
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no CUDA device"; exit 77; }
status=0
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool $test_bin --quick"
  "$sanitizer" --tool "$tool" --error-exitcode 3 "$test_bin" --quick || status=1
done
exit $status
