#!/bin/sh
# Prints each failed test with its log, then "N passed, N failed, N skipped" over the automake
# .trs results of the given build trees.  Exits 1 if any test failed or none ran.
passed=0; failed=0; skipped=0
for build in "$@"; do
  for trs in $(find "$build" -name '*.trs' | sort); do
    p=$(grep -c '^:test-result: PASS' "$trs"); f=$(grep -c -E '^:test-result: (FAIL|ERROR|XPASS)' "$trs")
    s=$(grep -c '^:test-result: SKIP' "$trs")
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "$f" -gt 0 ]; then
      echo "--- failures in ${trs%.trs}.log:"
      grep -E '^(not ok|#)' "${trs%.trs}.log" | head -60
    fi
  done
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
