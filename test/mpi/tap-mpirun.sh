# Sourced by the multi-rank TAP scripts: the mpirun environment for tests (as root,
# oversubscribed, yielding when idle), run_tap, which runs one mpirun per line of a list, and
# tap_result, one TAP line for scripts that judge their runs themselves.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
export COHORT_DEBUG=${COHORT_DEBUG:-WARN}
MPIRUN=${MPIRUN:-mpirun}

# run_tap PROGRAM TIMEOUT LINES [SUMMARY]: LINES holds "NP ARGS [@VAR=VALUE ...]" per line;
# one TAP line each.  Exit 0 passes (with the log's line matching SUMMARY appended, which
# must then exist), 77 skips (the log's "SKIP: reason"), anything else fails with the log's
# tail.
run_tap() {
  program=$1 limit=$2 lines=$3 summary=${4:-}
  echo "1..$(printf '%s\n' "$lines" | grep -c .)"
  n=0
  log=$(mktemp)
  printf '%s\n' "$lines" | grep . | while read -r np rest; do
    n=$((n + 1))
    env_arg=""
    # Everything after the first " @" (values may hold "@": COHORT_COLL_ALGO's coll@memory).
    case "$rest" in
      *" @"*) env_arg=$(printf '%s' "${rest#* @}" | sed 's/ @/ /g'); rest="${rest%% @*}" ;;
    esac
    name="np=$np $rest${env_arg:+ ($env_arg)}"
    # Variables reach the ranks through mpirun's environment (ranks are local), not -x, which
    # Open MPI refuses next to mca_base_env_list (set by the MPS helper on GPU machines).
    # shellcheck disable=SC2086
    timeout "$limit" env $env_arg "$MPIRUN" -np "$np" "$program" $rest >"$log" 2>&1 </dev/null
    rc=$?
    found=""
    [ -n "$summary" ] && found=$(grep -m1 "$summary" "$log")
    if [ $rc -eq 0 ] && { [ -z "$summary" ] || [ -n "$found" ]; }; then
      echo "ok $n - $name${found:+: $found}"
    elif [ $rc -eq 77 ]; then
      echo "ok $n - $name # SKIP $(grep -m1 '^SKIP' "$log" | sed 's/^SKIP: //')"
    else
      echo "not ok $n - $name (exit $rc)"
      tail -n 40 "$log" | sed 's/^/# /'
    fi
  done
  rm -f "$log"
}

# tap_result NAME WHY [SKIP]: the next TAP line (counter $n): ok when WHY is empty (skipped
# when SKIP gives a reason), else not ok with WHY and the last 20 lines of the file $tap_log.
tap_result() {
  n=$((n + 1))
  if [ -n "${3:-}" ]; then
    echo "ok $n - $1 # SKIP $3"
  elif [ -z "$2" ]; then
    echo "ok $n - $1"
  else
    echo "not ok $n - $1 ($2)"
    tail -n 20 "$tap_log" | sed 's/^/# /'
  fi
}
