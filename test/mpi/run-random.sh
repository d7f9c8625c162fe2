#!/bin/sh
# Randomized collectives against MPI (coll_random) under mpirun, one TAP line per run, the
# 100k-collective run at 4 ranks included (seconds: most counts are small).
# Environment: MPIRUN (default: mpirun), COLL_RANDOM (default: ./coll_random),
#              COHORT_RANDOM_RUNS (lines "NP ARGS [@ENV=VALUE]" replacing the default runs).
MPIRUN=${MPIRUN:-mpirun}
COLL_RANDOM=${COLL_RANDOM:-./coll_random}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
export COHORT_DEBUG=${COHORT_DEBUG:-WARN}
runs=${COHORT_RANDOM_RUNS:-"4 --iters 100000 --seed 42
2 --iters 20000 --seed 2
3 --iters 20000 --seed 3
8 --iters 10000 --seed 8
4 --iters 20000 --seed 9 @COHORT_SHM_SINGLE_COPY_BYTES=64
4 --iters 20000 --seed 5 --per-node 2 @UCX_TLS=tcp,self
5 --iters 20000 --seed 6 --per-node 3 @UCX_TLS=tcp,self"}
count=$(printf '%s\n' "$runs" | grep -c .)
echo "1..$count"
n=0
log=$(mktemp)
printf '%s\n' "$runs" | grep . | while read -r np rest; do
  n=$((n + 1))
  env_arg=""
  case "$rest" in
    *@*) env_arg="${rest##*@}"; rest="${rest%% @*}" ;;
  esac
  timeout 1800 env $env_arg "$MPIRUN" -np "$np" "$COLL_RANDOM" $rest >"$log" 2>&1 </dev/null
  rc=$?
  summary=$(grep '^coll_random:.*mismatches' "$log")
  if [ $rc -eq 0 ] && [ -n "$summary" ]; then
    echo "ok $n - np=$np $rest${env_arg:+ ($env_arg)}: ${summary#coll_random: }"
  else
    echo "not ok $n - np=$np $rest${env_arg:+ ($env_arg)} (exit $rc)"
    sed 's/^/# /' "$log" | tail -40
  fi
done
rm -f "$log"
