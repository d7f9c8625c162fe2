#!/bin/sh
# Runs cohort_perf's collective sweep with --check under mpirun (small sizes, seconds) and prints
# one TAP line per run, for automake's tap-driver.sh.  A run passes when it exits 0, prints
# every size of every collective asked for, and every row's #wrong is 0 (read from --json);
# the bad-argument runs pass when they fail with a message that names the argument, once.
# Environment: MPIRUN (default: mpirun), COHORT_PERF (default: ../../tools/cohort_perf),
#              COHORT_PERF_CHECK_FILTER (a grep -E pattern over the test names, to run a subset).
MPIRUN=${MPIRUN:-mpirun}
COHORT_PERF=${COHORT_PERF:-../../tools/cohort_perf}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
export COHORT_DEBUG="${COHORT_DEBUG:-WARN}"

# Sizes 7, 21, ..., 45927 bytes: element counts 0, 1 and many that no rank count divides.
sweep="-b 7 -e 64K -f 3 -n 3 -w 1"
sizes=9

# "NP check COLLECTIVES ARGS...": a validated sweep; "NP fails PATTERN ARGS...": a bad
# argument that must fail, printing PATTERN (underscores stand for spaces) once.
tests=""
add() { tests="$tests
$*"; }
for np in 2 4; do
  add "$np check all -d fp32 -o sum"
  add "$np check allreduce,reduce,reduce_scatter -d int8 -o prod"
  add "$np check allreduce,reduce,reduce_scatter -d uint8 -o avg"
  add "$np check allreduce,reduce,reduce_scatter -d fp16 -o avg"
  add "$np check allreduce,reduce,reduce_scatter -d bf16 -o max"
  add "$np check allreduce,reduce,reduce_scatter -d uint64 -o min"
  add "$np check reduce,broadcast -d int32 -r $((np - 1))"
  add "$np check allgather,alltoall,broadcast -d fp64 --in-place"
  add "$np check allgather,reduce_scatter,alltoall -d bf16 --out-of-place"
  add "$np check all -d int64 -o max --vs-mpi"
done
add "3 check all -d int32 -o sum"
add "1 check all -d fp32 -o avg"
add "2 fails -d_bogus:_unknown_dtype -c allreduce -d bogus"
add "2 fails -o_mean:_unknown_op -c allreduce -o mean"
add "2 fails -c_nosuch:_unknown_collective -c nosuch"
add "2 fails -r_2:_the_root_must_be_below_the_rank_count -c reduce -r 2"
add "2 fails belong_to_the_collective_sweep -b 8"

if [ -n "$COHORT_PERF_CHECK_FILTER" ]; then
  tests=$(printf '%s\n' "$tests" | grep -E -- "$COHORT_PERF_CHECK_FILTER")
fi
count=$(printf '%s\n' "$tests" | grep -c .)
echo "1..$count"
log=$(mktemp)
json=$(mktemp)
trap 'rm -f "$log" "$json"' EXIT

# Why a --check run failed, or nothing.  $1: collectives, $2: placements.
check_output() {
  collectives=$1 placements=$2
  rows=0
  for c in $(echo "$collectives" | tr , ' '); do
    case $c in
      all) rows=$((rows + 6 * sizes + 1)) ;;
      barrier) rows=$((rows + 1)) ;;
      *) rows=$((rows + sizes)) ;;
    esac
  done
  printed=$(grep -c '^ *[0-9]' "$log")
  [ "$printed" -eq "$rows" ] || { echo "$printed table rows, expected $rows"; return; }
  grep -q '^# Wrong elements *: 0 OK$' "$log" || { echo "no '# Wrong elements : 0 OK' line"; return; }
  # Every row of the JSON but the barrier's (nothing to compare) has a #wrong: all must be 0.
  checked=$(grep -c '"wrong": [0-9]' "$json")
  barriers=$(grep -c '"collective": "barrier"' "$json")
  [ "$checked" -eq $(((rows - barriers / placements) * placements)) ] ||
    { echo "$checked checked rows in the JSON, expected $(((rows - barriers / placements) * placements))"; return; }
  bad=$(grep -o '"wrong": [0-9][0-9]*' "$json" | grep -vc '"wrong": 0$')
  [ "$bad" -eq 0 ] || echo "$bad row(s) with wrong elements"
}

n=0
printf '%s\n' "$tests" | grep . | while read -r np kind what args; do
  n=$((n + 1))
  rm -f "$json"
  if [ "$kind" = check ]; then
    name="np=$np -c $what $args"
    # shellcheck disable=SC2086
    timeout 240 "$MPIRUN" -np "$np" "$COHORT_PERF" -c "$what" $sweep $args --check \
      --json "$json" >"$log" 2>&1 </dev/null
    rc=$?
    placements=2
    case " $args " in *" --in-place "* | *" --out-of-place "*) placements=1 ;; esac
    why=""
    if [ $rc -ne 0 ]; then
      why="exit $rc"
    else
      why=$(check_output "$what" "$placements")
    fi
  else
    pattern=$(echo "$what" | tr _ ' ')
    name="np=$np $args (must fail: $pattern)"
    # shellcheck disable=SC2086
    timeout 240 "$MPIRUN" -np "$np" "$COHORT_PERF" $args >"$log" 2>&1 </dev/null
    rc=$?
    found=$(grep -cF -- "$pattern" "$log")
    why=""
    if [ $rc -eq 0 ]; then
      why="exit 0"
    elif [ "$found" -ne 1 ]; then
      why="message '$pattern' printed $found times"
    fi
  fi
  if [ -z "$why" ]; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name ($why)"
    tail -n 25 "$log" | sed 's/^/# /'
  fi
done
