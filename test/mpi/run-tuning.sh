#!/bin/sh
# Tuning files (COHORT_TUNING_FILE) end to end, one TAP line per check: cohort_perf
# --calibrate writes one on host memory, the library and cohort_info read it back, its rules
# choose the algorithm (seen in the COLL trace) only for the team size they were measured on,
# and every bad file or mismatch between ranks is a named error on every rank.
# Environment: MPIRUN (default: mpirun), COHORT_PERF (default: ../../tools/cohort_perf),
#              COHORT_INFO (default: ../../tools/cohort_info).
COHORT_PERF=${COHORT_PERF:-../../tools/cohort_perf}
COHORT_INFO=${COHORT_INFO:-$(dirname "$COHORT_PERF")/cohort_info}
. "$(dirname "$0")/tap-mpirun.sh"
export COHORT_DEBUG=WARN  # the checks count the lines that name an error
unset COHORT_TUNING_FILE COHORT_COLL_ALGO

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log=$dir/log
tap_log=$log
n=0
# Runs cohort_perf on NP ranks with a timeout; output in $log, exit status in $rc.
perf() {
  np=$1
  shift
  timeout 300 "$MPIRUN" -np "$np" "$@" >"$log" 2>&1 </dev/null
  rc=$?
}
# "" when $log holds PATTERN (fixed text) exactly COUNT times, else why not.  A failed creation
# prints its error in each rank's WARN line and once in cohort_perf's own: NP + 1 times.
printed() {
  found=$(grep -cF -- "$1" "$log")
  [ "$found" -eq "$2" ] || echo "'$1' printed $found times, expected $2"
}
# "" when every validated sweep in $log found no wrong element (and there was one), else why not.
all_right() {
  sweeps=$(grep -c '^# Wrong elements' "$log")
  right=$(grep -c '^# Wrong elements *: 0 OK$' "$log")
  [ "$sweeps" -gt 0 ] && [ "$sweeps" -eq "$right" ] || echo "$right of $sweeps sweeps validated"
}
sweep="-c allreduce,broadcast -b 8 -e 64K -f 8 -n 3 -w 1"

echo "1..13"

perf 2 "$COHORT_PERF" --calibrate "$dir/cal.tune" -c allreduce,broadcast,barrier -b 8 -e 64K \
  -f 8 -n 3 -w 1 --check
rules=$(grep -c '^rule ' "$dir/cal.tune" 2>/dev/null)
why=""
if [ $rc -ne 0 ]; then
  why="exit $rc"
elif [ "$(grep -v '^#' "$dir/cal.tune" | head -1)" != "cohort-tuning 1" ]; then
  why="no 'cohort-tuning 1' line first"
elif [ "$rules" -lt 2 ]; then
  why="$rules rule lines, expected one or more for allreduce and for broadcast"
elif [ "$(grep '^rule ' "$dir/cal.tune" | grep -vc ' ranks=2 hosts=1 us=')" -ne 0 ]; then
  why="a rule without 'ranks=2 hosts=1 us='"
elif ! grep -q '^rule allreduce@host:0-' "$dir/cal.tune" || ! grep -q '^rule broadcast@host:0-' "$dir/cal.tune"; then
  why="no rule from 0 bytes for allreduce and broadcast"
else
  why=$(printed "# --calibrate: barrier has one algorithm on host memory: nothing to choose" 1)
  [ -n "$why" ] || why=$(printed "# --calibrate: $rules rules in $dir/cal.tune" 1)
  [ -n "$why" ] || why=$(all_right)
fi
tap_result "np=2 cohort_perf --calibrate writes a file of measured rules" "$why"

# A run at 3 ranks merges into the file: the 2-rank blocks stay, allreduce's 3-rank block joins.
cp "$dir/cal.tune" "$dir/two.tune"
perf 3 "$COHORT_PERF" --calibrate "$dir/cal.tune" -c allreduce -b 8 -e 64K -f 8 -n 3 -w 1
why=""
if [ $rc -ne 0 ]; then
  why="exit $rc"
elif [ "$(grep '^rule ' "$dir/two.tune" | grep -vxFf "$dir/cal.tune" | wc -l)" -ne 0 ]; then
  why="a rule of the 2-rank run is gone"
elif ! grep -q '^rule allreduce@host:0-.* ranks=3 hosts=1 us=' "$dir/cal.tune"; then
  why="no allreduce rule for 3 ranks"
elif grep '^rule ' "$dir/cal.tune" | grep -v ' ranks=[23] hosts=1 ' | grep -q .; then
  why="a rule for other ranks"
elif [ "$(grep -c '^# \[allreduce@host ranks=3 hosts=1\] ' "$dir/cal.tune")" -ne 5 ]; then
  why="not 5 sizes of times in the 3-rank block"
fi
rules=$(grep -c '^rule ' "$dir/cal.tune")
tap_result "np=3 cohort_perf --calibrate merges into the file, keeping the 2-rank rules" "$why"

echo "not a tuning file" >"$dir/junk.tune"
perf 2 "$COHORT_PERF" --calibrate "$dir/junk.tune" -c allreduce -n 1 -w 0
why=""
[ $rc -ne 0 ] || why="exit 0"
[ -n "$why" ] || why=$(printed "$dir/junk.tune is no tuning file" 1)
if [ -z "$why" ] && grep -q "COHORT_COLL_ALGO=" "$log"; then why="it measured before refusing"; fi
[ -n "$why" ] || [ "$(cat "$dir/junk.tune")" = "not a tuning file" ] || why="the file changed"
printf 'cohort-tuning 1\nmachine no GPU, 999 cores, host elsewhere, Cohort 0\n' >"$dir/far.tune"
perf 2 "$COHORT_PERF" --calibrate "$dir/far.tune" -c allreduce -n 1 -w 0
if [ -z "$why" ]; then
  why=$(printed "$dir/far.tune was measured on 'no GPU, 999 cores, host elsewhere, Cohort 0'" 1)
  [ $rc -ne 0 ] || why="exit 0 on a file of another machine"
fi
if [ -z "$why" ] && grep -q "COHORT_COLL_ALGO=" "$log"; then why="it measured before refusing"; fi
tap_result "np=2 --calibrate into a file that is no tuning file or of another machine: refused before measuring, file kept" "$why"

COHORT_TUNING_FILE="$dir/cal.tune" "$COHORT_INFO" --algorithms >"$log" 2>&1
rc=$?
why=""
[ $rc -eq 0 ] || why="exit $rc"
[ -n "$why" ] || why=$(printed "(the tuning file)" "$rules")
[ -n "$why" ] || why=$(printed "(the tuning file was measured on " 1)
tap_result "cohort_info --algorithms prints the file's $rules rules" "$why"

# shellcheck disable=SC2086
perf 2 env COHORT_TUNING_FILE="$dir/cal.tune" "$COHORT_PERF" $sweep --check
why=""
[ $rc -eq 0 ] || why="exit $rc"
[ -n "$why" ] || why=$(all_right)
tap_result "np=2 a sweep on the calibrated file validates" "$why"

# A rule for 2 ranks only: the trace names the algorithm and where its rule came from.
printf '# forced\ncohort-tuning 1\nmachine test\nrule allreduce@host=ring*2 ranks=2 hosts=1\n' \
  >"$dir/ring.tune"
trace="env COHORT_DEBUG=TRACE COHORT_DEBUG_SUBSYS=COLL COHORT_TUNING_FILE=$dir/ring.tune"
one="-c allreduce -b 8 -e 8 -n 1 -w 0 --out-of-place"
# shellcheck disable=SC2086
perf 2 $trace "$COHORT_PERF" $one
why=""
[ $rc -eq 0 ] || why="exit $rc"
[ -n "$why" ] || why=$(printed "allreduce of 8 bytes on host memory: ring on 2 channel(s), from the tuning file" 2)
tap_result "np=2 the file's rule for 2 ranks chooses ring on 2 channels" "$why"
# shellcheck disable=SC2086
perf 3 $trace "$COHORT_PERF" $one
why=""
[ $rc -eq 0 ] || why="exit $rc"
[ -n "$why" ] || why=$(printed "allreduce of 8 bytes on host memory: direct on 1 channel(s), from the defaults" 3)
tap_result "np=3 the rule for 2 ranks does not apply: the defaults choose" "$why"

# Rank 1 reads other text: creation fails on every rank, naming the setting.
printf 'cohort-tuning 1\nrule allreduce@host=direct ranks=2 hosts=1\n' >"$dir/other.tune"
cp "$dir/ring.tune" "$dir/copy.tune"
by_rank='if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then COHORT_TUNING_FILE=$1; fi; shift; export COHORT_TUNING_FILE; exec "$@"'
perf 2 env COHORT_TUNING_FILE="$dir/ring.tune" sh -c "$by_rank" x "$dir/other.tune" "$COHORT_PERF" $one
why=""
[ $rc -ne 0 ] || why="exit 0"
[ -n "$why" ] || why=$(printed "a setting that decides what goes on the wire differs between ranks" 3)
[ -n "$why" ] || grep -q "COHORT_TUNING_FILE: 1 rules, text hash" "$log" || why="the message does not name the tuning file"
tap_result "np=2 files of other text on rank 1: creation refused, naming the setting" "$why"
# shellcheck disable=SC2086
perf 2 $trace sh -c "$by_rank" x "$dir/copy.tune" "$COHORT_PERF" $one
why=""
[ $rc -eq 0 ] || why="exit $rc"
[ -n "$why" ] || why=$(printed "ring on 2 channel(s), from the tuning file" 2)
[ -n "$why" ] || why=$(printed "tuning file $dir/copy.tune: 1 rules" 1)
tap_result "np=2 the same text at another path on rank 1: accepted" "$why"

printf 'cohort-tuning 1\n# fine so far\nrule allreduce@host=ring ranks=0 hosts=1\n' >"$dir/bad.tune"
# shellcheck disable=SC2086
perf 2 env COHORT_TUNING_FILE="$dir/bad.tune" "$COHORT_PERF" $one
why=""
[ $rc -ne 0 ] || why="exit 0"
[ -n "$why" ] || why=$(printed "COHORT_TUNING_FILE=$dir/bad.tune:3: ranks= takes N or LO-HI, at least 1" 3)
tap_result "np=2 a bad line: creation refused, naming the file, the line and the key" "$why"
# shellcheck disable=SC2086
perf 2 env COHORT_TUNING_FILE="$dir/none.tune" "$COHORT_PERF" $one
why=""
[ $rc -ne 0 ] || why="exit 0"
[ -n "$why" ] || why=$(printed "COHORT_TUNING_FILE=$dir/none.tune: cannot open the file: No such file or directory" 3)
tap_result "np=2 a missing file: creation refused, naming it" "$why"

COHORT_TUNING_FILE="$dir/bad.tune" "$COHORT_INFO" --params >"$log" 2>&1
rc=$?
why=""
[ $rc -eq 1 ] || why="exit $rc, expected 1"
[ -n "$why" ] || why=$(printed "COHORT_TUNING_FILE='$dir/bad.tune'" 1)
tap_result "cohort_info --params lists the bad file" "$why"

perf 2 "$COHORT_PERF" --calibrate "$dir/x.tune" -c allreduce --vs-mpi
why=""
[ $rc -ne 0 ] || why="exit 0"
[ -n "$why" ] || why=$(printed "--calibrate times Cohort's algorithms out of place against each other" 1)
tap_result "np=2 --calibrate with --vs-mpi: refused, saying why" "$why"
