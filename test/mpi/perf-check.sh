#!/bin/sh
# Runs cohort_perf's collective sweep with --check under mpirun (small sizes, seconds) and prints
# one TAP line per run, for automake's tap-driver.sh.  A run passes when it exits 0, prints
# every size of every collective asked for, and every row's #wrong is 0 (read from --json);
# the bad-argument runs pass when they fail with a message that names the argument, once.
# The -m cuda runs (GPU device memory) pass the same way, where a collective the GPU does not
# run yet prints its one "not on the GPU yet" line instead of rows (allreduce must run); they
# are skipped, with cohort_perf's reason, where there is no GPU or no CUDA in the build (exit
# 77).  Ranks share the GPU (COHORT_ALLOW_SHARED_GPU=1): slow without MPS, still correct.
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

# "NP check COLLECTIVES ARGS...": a validated sweep; "NP cuda COLLECTIVES ARGS...": the same on
# GPU device memory (-m cuda); "NP fails PATTERN ARGS...": a bad argument that must fail,
# printing PATTERN (underscores stand for spaces) once.
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
add "1 cuda all -d fp32 -o sum --graph 4 --roofline --vs-nccl"
add "2 cuda allreduce,broadcast -d bf16 -o max --graph 2"
add "3 cuda allreduce -d int32 -o avg --in-place"
add "4 cuda allreduce,reduce_scatter -d fp16 -o sum --roofline"
add "2 fails --vs-mpi_on_GPU_device_memory -c allreduce -m cuda --vs-mpi"
add "2 fails -m_bogus:_unknown_memory -c allreduce -m bogus"
add "2 fails --graph,_--roofline,_--no-register_and_--blocking_run_on_the_GPU -c allreduce --graph 4"
add "2 fails --graph,_--roofline,_--no-register_and_--blocking_run_on_the_GPU -c allreduce --no-register"
add "2 fails --graph,_--roofline,_--no-register_and_--blocking_run_on_the_GPU -c allreduce --blocking"
add "2 cuda allreduce,allgather,reduce_scatter,alltoall -d fp32 -o sum --no-register"
add "2 cuda allreduce,broadcast -d fp32 -o sum --blocking"

if [ -n "$COHORT_PERF_CHECK_FILTER" ]; then
  tests=$(printf '%s\n' "$tests" | grep -E -- "$COHORT_PERF_CHECK_FILTER")
fi
count=$(printf '%s\n' "$tests" | grep -c .)
echo "1..$count"
log=$(mktemp)
json=$(mktemp)
trap 'rm -f "$log" "$json"' EXIT

# Why a --check run failed, or nothing.  $1: collectives, $2: placements.  A collective that
# printed "# NAME: not on the GPU yet" has no rows (allreduce always has).
check_output() {
  collectives=$1 placements=$2
  rows=0
  for c in $(echo "$collectives" | tr , ' '); do
    if grep -q "^# $c: not on the GPU yet: " "$log"; then
      [ "$c" != allreduce ] || { echo "allreduce did not run on the GPU"; return; }
      continue
    fi
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
  [ "$bad" -eq 0 ] || { echo "$bad row(s) with wrong elements"; return; }
  # Where NCCL ran (--vs-nccl, one rank per GPU), the ratio table ends the run: a line per size.
  if grep -q '^# nccl: NCCL [0-9]' "$log"; then
    ratios=$(sed -n '/^# Cohort\/NCCL time, /,$p' "$log" | grep -c '^# *[0-9]')
    [ "$ratios" -eq "$sizes" ] || echo "$ratios lines in the Cohort/NCCL ratio table, expected $sizes"
  fi
}

n=0
printf '%s\n' "$tests" | grep . | while read -r np kind what args; do
  n=$((n + 1))
  rm -f "$json"
  skip=""
  if [ "$kind" = check ] || [ "$kind" = cuda ]; then
    memory=""
    [ "$kind" = cuda ] && memory="-m cuda"
    name="np=$np${memory:+ $memory} -c $what $args"
    # shellcheck disable=SC2086
    COHORT_ALLOW_SHARED_GPU=1 timeout 240 "$MPIRUN" -np "$np" "$COHORT_PERF" $memory -c "$what" \
      $sweep $args --check --json "$json" >"$log" 2>&1 </dev/null
    rc=$?
    placements=2
    case " $args " in *" --in-place "* | *" --out-of-place "*) placements=1 ;; esac
    why=""
    if [ $rc -eq 77 ] && [ "$kind" = cuda ]; then
      skip=$(sed -n 's/^cohort_perf: -m cuda: skipped: //p' "$log" | head -1)
      [ -n "$skip" ] || why="exit 77 without saying why"
    elif [ $rc -ne 0 ]; then
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
  if [ -n "$skip" ] && [ -z "$why" ]; then
    echo "ok $n - $name # SKIP $skip"
  elif [ -z "$why" ]; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name ($why)"
    tail -n 25 "$log" | sed 's/^/# /'
  fi
done
