#!/bin/sh
# usage: summarize-tests.sh BUILD_DIR:MAKE_CHECK_EXIT ...
# Prints each failed test with its log, then "N passed, N failed, N skipped" over the automake
# .trs results of the given build trees.  A `make check` that failed without a failed test
# (a build error, a crashed driver) counts as one failure.  Exits 1 on any failure or no test.
passed=0; failed=0; skipped=0
for arg in "$@"; do
  build=${arg%:*}
  rc=${arg##*:}
  tree_failed=0
  for trs in $(find "$build" -name '*.trs' | sort); do
    p=$(grep -c '^:test-result: PASS' "$trs")
    f=$(grep -c -E '^:test-result: (FAIL|ERROR|XPASS)' "$trs")
    s=$(grep -c '^:test-result: SKIP' "$trs")
    passed=$((passed + p)); skipped=$((skipped + s)); tree_failed=$((tree_failed + f))
    if [ "$f" -gt 0 ]; then
      echo "--- failures in ${trs%.trs}.log:"
      grep -E '^(not ok|#)' "${trs%.trs}.log" | head -60
    fi
  done
  if [ "$rc" != 0 ] && [ "$tree_failed" -eq 0 ]; then
    echo "--- make check failed in $build (exit $rc) without a failed test:"
    tail -n 25 "$build/check.out"
    tree_failed=1
  fi
  failed=$((failed + tree_failed))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
