#!/bin/sh
# Teams from a unique id without MPI (unique_id_test forks the ranks): one TAP line per run.
# COHORT_TEST_SOCKET_RUNS overrides the list ("scenario:ranks ...").
here=$(dirname "$0")
prog=${UNIQUE_ID_TEST:-./unique_id_test}
runs=${COHORT_TEST_SOCKET_RUNS:-"bad-args:1 basic:1 basic:2 basic:4 missing:3 missing-creator:3 \
intruders:3 wrong-size:3 duplicate:3 abort:3 basic:8"}
set -- $runs
echo "1..$#"
n=0
for run in $runs; do
  n=$((n + 1))
  scenario=${run%%:*}
  ranks=${run#*:}
  log=$(mktemp)
  if timeout 180 "$prog" "$scenario" "$ranks" >"$log" 2>&1; then
    echo "ok $n - $scenario, $ranks ranks"
  else
    echo "not ok $n - $scenario, $ranks ranks"
    sed 's/^/# /' "$log"
  fi
  rm -f "$log"
done
exit 0
