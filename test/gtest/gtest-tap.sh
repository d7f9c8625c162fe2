#!/bin/sh
# Runs ./unit_tests (from the current build directory) and turns its GoogleTest output into
# TAP for automake's tap-driver.sh: one "ok"/"not ok" line per test case, a "# SKIP" directive
# for skipped tests, and a failure when the binary crashes, exits non-zero without reporting a
# failed test, or runs no test at all.  Every line the binary prints is kept as a "# " comment,
# so test-suite.log holds the full output.  Extra arguments go to the binary.

prog=./unit_tests
if [ ! -x "$prog" ]; then
  echo "Bail out! $prog not found or not executable in $(pwd)"
  exit 1
fi

tmp=${TMPDIR:-/tmp}/gtest-tap.$$
trap 'rm -f "$tmp"' EXIT
trap 'rm -f "$tmp"; exit 130' INT TERM

"$prog" --gtest_brief=0 --gtest_color=no "$@" >"$tmp" 2>&1
rc=$?

${AWK:-awk} -v rc="$rc" '
function name_of(line,   s) {
  # "[       OK ] Suite.Name (12 ms)" -> "Suite.Name"
  s = substr(line, index(line, "] ") + 2)
  sub(/ \([0-9]+ ms\)$/, "", s)
  sub(/, where (GetParam|TypeParam)\(\) = .*$/, "", s)
  sub(/[ \t\r]+$/, "", s)
  return s
}
function clean(s) {
  gsub(/[\t\r]/, " ", s)
  gsub(/#/, "\\#", s)
  return s
}
function result(text) {
  n++
  out[++lines] = text
}
{
  sub(/\r$/, "")
  out[++lines] = "# " $0
}
/^\[ RUN      \] / {
  current = name_of($0)
  reason = ""
  in_skip = 0
  next
}
current != "" && /: Skipped$/ { in_skip = 1; next }
current != "" && in_skip && !/^\[/ {
  if ($0 != "") reason = reason (reason == "" ? "" : " ") $0
  next
}
/^\[       OK \] / {
  t = name_of($0)
  if (t == current) { result("ok " (n + 1) " - " clean(t)); current = "" }
  next
}
/^\[  FAILED  \] / {
  t = name_of($0)
  if (t == current) { result("not ok " (n + 1) " - " clean(t)); failed++; current = "" }
  next
}
/^\[  SKIPPED \] / {
  t = name_of($0)
  if (t == current) {
    gsub(/#/, " ", reason)
    gsub(/[ \t\r]+/, " ", reason)
    sub(/^ /, "", reason)
    sub(/ $/, "", reason)
    result("ok " (n + 1) " - " clean(t) " # SKIP" (reason == "" ? "" : " " reason))
    current = ""
  }
  next
}
END {
  if (current != "") {
    result("not ok " (n + 1) " - " clean(current) " (no result: unit_tests died, exit status " rc ")")
    failed++
  }
  if (n == 0) {
    for (i = 1; i <= lines; i++) print out[i]
    print "Bail out! unit_tests ran no test (exit status " rc ")"
    exit 0
  }
  if (rc != 0 && failed == 0) {
    result("not ok " (n + 1) " - unit_tests exited with status " rc " although no test failed")
  }
  print "1.." n
  for (i = 1; i <= lines; i++) print out[i]
}
' "$tmp"
exit 0
