#!/bin/sh
# cohort_perf --json and contrib/plot-perf.py end to end, one TAP line each: 2-rank runs write
# JSON that parses and holds the run's metadata, and the plot script turns one file, and two,
# into a non-empty PNG and refuses a team-create file.  The plots skip, with the reason, when
# matplotlib is missing.
# Environment: MPIRUN (default: mpirun), COHORT_PERF (default: ../../tools/cohort_perf),
#              PYTHON (default: python3, else /usr/bin/python3 when only it has matplotlib).
. "$(dirname "$0")/tap-mpirun.sh"
COHORT_PERF=${COHORT_PERF:-../../tools/cohort_perf}
PLOT=$(dirname "$0")/../../contrib/plot-perf.py
# Debian's python3-matplotlib is /usr/bin/python3's; a python3 earlier on PATH may lack it.
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null &&
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  PYTHON=/usr/bin/python3
fi
no_json="" no_plot=""
"$PYTHON" -c '' 2>/dev/null || no_json="no $PYTHON to read the JSON"
"$PYTHON" -c 'import matplotlib' 2>/dev/null ||
  no_plot=${no_json:-"matplotlib not found by $PYTHON (Debian: python3-matplotlib)"}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
n=0
tap_log=$dir/log
# run NAME ARGS...: cohort_perf on 2 ranks.
run() {
  name=$1
  shift
  timeout 120 "$MPIRUN" -np 2 "$COHORT_PERF" "$@" >"$dir/log" 2>&1 </dev/null
  rc=$?
  tap_result "$name" "$([ $rc -eq 0 ] || echo "exit $rc")"
}
# has_fields FILE KEY...: the file parses as JSON and has every key at the top.
has_fields() {
  [ -z "$no_json" ] || return
  file=$1
  shift
  "$PYTHON" -m json.tool "$file" >/dev/null 2>"$dir/log" || { echo "not JSON"; return; }
  "$PYTHON" -c 'import json, sys
doc = json.load(open(sys.argv[1]))
missing = [k for k in sys.argv[2:] if k not in doc]
print("missing: " + " ".join(missing) if missing else "", end="")
ranks = doc.get("ranks")
print("" if ranks == 2 else " ranks is %r, not 2" % ranks, end="")' "$file" "$@"
}
# plot NAME EXPECT FILE...: the plot script on FILEs; EXPECT png (a PNG made) or a message
# it must fail with.
plot() {
  name=$1 expect=$2
  shift 2
  if [ -n "$no_plot" ]; then
    tap_result "$name" "" "$no_plot"
    return
  fi
  rm -f "$dir/plot.png"
  "$PYTHON" "$PLOT" "$@" -o "$dir/plot.png" >"$dir/log" 2>&1
  rc=$?
  if [ "$expect" = png ]; then
    magic=$(head -c 4 "$dir/plot.png" 2>/dev/null | tail -c 3)
    tap_result "$name" "$([ $rc -eq 0 ] || echo "exit $rc")$([ "$magic" = PNG ] || echo " no PNG")"
  else
    tap_result "$name" "$([ $rc -ne 0 ] || echo "exit 0")$(grep -q "$expect" "$dir/log" ||
      echo " no '$expect'")"
  fi
}

echo "1..8"
sweep="-b 8 -e 64K -f 8 -n 3 -w 1"
# shellcheck disable=SC2086
run "np=2 sweep --vs-mpi --json" -c allreduce,allgather,barrier $sweep --vs-mpi --json "$dir/a.json"
tap_result "the sweep's JSON parses and has the run's fields" "$(has_fields "$dir/a.json" benchmark \
  version git_revision date ranks hosts host_load units rows)" "$no_json"
# shellcheck disable=SC2086
run "np=2 sweep --in-place --json" -c allreduce,broadcast $sweep --in-place --json "$dir/b.json"
run "np=2 team-create --json" --team-create -n 2 -w 0 --json "$dir/team.json"
tap_result "the team-create JSON parses and has the run's fields" "$(has_fields "$dir/team.json" \
  benchmark version git_revision date ranks hosts units create_ms destroy_ms phases_ms)" "$no_json"
plot "plot of one file (Cohort and MPI)" png "$dir/a.json"
plot "plot of two files" png "$dir/a.json" "$dir/b.json"
plot "plot of a team-create file fails" "not a collective sweep" "$dir/team.json"
