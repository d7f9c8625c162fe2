#!/usr/bin/env bash
# The OSU micro-benchmarks' host collectives, validated (-c), across fake hosts through the
# Open MPI component (coll_cohort_host 1) and without it, side by side:
#   contrib/osu-check.sh OSU_COLLECTIVE_DIR COMPONENT_DIR RESULTS_DIR
#
#   OSU_COLLECTIVE_DIR  a built OSU's c/mpi/collective folder (osu_allreduce, ...); OSU is not
#                       a Debian package: build it from its sources with CC=mpicc
#   COMPONENT_DIR       the folder holding mca_coll_cohort.so, e.g.
#                       build/_install/lib/cohort/openmpi (its libcohort.so.0 in ../..)
#   RESULTS_DIR         one log per run, and summary.txt
#
# Each of the seven collectives the GPU path runs (allreduce, reduce, bcast, allgather,
# reduce_scatter, alltoall, barrier) and their nonblocking forms run at OSU_SHAPES (default
# "2x1 2x2": hosts x ranks per host; each rank gets COHORT_HOST_ID=osu-h<rank / per-host>)
# over UCX_TLS (default tcp,self: the loopback wire between the fake hosts), OFF (the component
# disabled) and ON.  A run passes when it exits 0 within OSU_TIMEOUT (default 120 s) and no
# validated row says Fail (barrier and the nonblocking barrier have no data to validate).
# ON must also show, in the component's verbose summary, the benchmark's calls on Cohort.
# Exit 0 when every run passed.
set -u
osu=$(cd "${1:?usage: contrib/osu-check.sh OSU_COLLECTIVE_DIR COMPONENT_DIR RESULTS_DIR}" && pwd)
component=$(cd "${2:?usage: contrib/osu-check.sh OSU_COLLECTIVE_DIR COMPONENT_DIR RESULTS_DIR}" && pwd)
results=${3:?usage: contrib/osu-check.sh OSU_COLLECTIVE_DIR COMPONENT_DIR RESULTS_DIR}
mkdir -p "$results"
summary=$results/summary.txt
: >"$summary"
export UCX_TLS=${UCX_TLS:-tcp,self}
export LD_LIBRARY_PATH=$component/../..${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
default_path=$(ompi_info --parsable --param mca all --level 9 2>/dev/null |
  sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p')
[ -n "$default_path" ] || default_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
sizes=${OSU_SIZES:-1:1048576}
failed=0
passed=0

# mode shape bench: one run; prints its verdict.
one() {
  local mode=$1 hosts=${2%x*} per=${2#*x} bench=$3
  local np=$((hosts * per)) log=$results/$3-$2-$1.log
  local mca=(--mca mca_base_component_path "$component:$default_path")
  if [ "$mode" = ON ]; then
    mca+=(--mca coll_cohort_host 1 --mca coll_cohort_verbose 1)
  else
    mca+=(--mca coll_cohort_enable 0)
  fi
  local args=(-m "$sizes" -i 20 -x 5)
  # OSU 7.0's reduce-scatter validation copies a whole message out of a receive buffer of
  # 1 / np of the largest one (validate_reduce_scatter in c/util/osu_util_mpi.c): past the
  # heap's slack that read faults, with or without the component.  Its sizes stop at
  # OSU_RS_SIZES (default 1:65536), where the read stays inside the heap.
  case $bench in *reduce_scatter) args=(-m "${OSU_RS_SIZES:-1:65536}" -i 20 -x 5) ;; esac
  case $bench in *barrier) args=(-i 200 -x 20) ;; *) args+=(-c) ;; esac
  timeout "${OSU_TIMEOUT:-120}" mpirun --allow-run-as-root --oversubscribe -np "$np" \
    -x LD_LIBRARY_PATH -x UCX_TLS "${mca[@]}" sh -c \
    "COHORT_HOST_ID=osu-h\$((OMPI_COMM_WORLD_RANK / $per)) exec \"\$@\"" x "$osu/$bench" \
    "${args[@]}" >"$log" 2>&1
  local rc=$? why="" mpi_name=MPI_${bench#osu_}
  if [ $rc -ne 0 ]; then
    why="exit $rc"
  elif grep -qE '^[0-9]+ .*Fail' "$log"; then
    why="a row failed validation"
  elif [ "$mode" = ON ] && ! grep -qiE " $mpi_name [0-9]+ on Cohort" "$log"; then
    why="no $mpi_name ran on Cohort (the component's summary)"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    echo "pass $bench $2 $mode ($(grep -cE '^[0-9]+ ' "$log") sizes, $(grep -c ' COHORT WARN ' "$log") warnings)"
  else
    failed=$((failed + 1))
    echo "FAIL $bench $2 $mode: $why (see $log)"
  fi
}

for shape in ${OSU_SHAPES:-2x1 2x2}; do
  for bench in ${OSU_BENCHES:-allreduce reduce bcast allgather reduce_scatter alltoall barrier}; do
    for b in osu_$bench osu_i$bench; do
      if [ ! -x "$osu/$b" ]; then
        echo "FAIL $b: not in $osu" | tee -a "$summary"
        failed=$((failed + 1))
        continue
      fi
      for mode in OFF ON; do
        one $mode "$shape" "$b" >>"$summary"
        tail -n 1 "$summary"
      done
    done
  done
done
echo "$passed passed, $failed failed (UCX_TLS=$UCX_TLS, sizes $sizes, reduce-scatter ${OSU_RS_SIZES:-1:65536})" | tee -a "$summary"
[ $failed -eq 0 ]
