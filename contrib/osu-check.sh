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
# OSU_DEVICE=cuda runs them on device buffers (OSU built with --enable-cuda; several ranks on
# one GPU need MPS and COHORT_ALLOW_SHARED_GPU=1): then ON must also show allreduce, reduce,
# bcast, allgather and alltoall on Cohort's GPU path in the summary.
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
skipped=0
# On device buffers, OFF needs a CUDA-aware Open MPI (Debian's is not: its modules would read
# device memory and fault); without one OFF is skipped, said.
off_skipped=""
if [ -n "${OSU_DEVICE:-}" ] &&
  ! ompi_info --parsable --all 2>/dev/null | grep -q 'mpi_built_with_cuda_support:value:true'; then
  off_skipped="this Open MPI is not CUDA-aware: its modules would read device buffers"
fi
# OSU 7.0's reduce-scatter validation over-reads (below): on device buffers its cudaMemcpy
# fails past 16 KiB, or at 16 KiB on some machines (device call 48: "invalid argument" there,
# 8 KiB passing); on host memory the read faults past the heap's slack.
rs_sizes=${OSU_RS_SIZES:-1:65536}
[ -n "${OSU_DEVICE:-}" ] && rs_sizes=${OSU_RS_SIZES:-1:8192}

# Benchmarks whose calls on device memory Cohort's GPU path runs (blocking ones with buffers;
# OSU's reduce-scatter calls MPI_Reduce_scatter, a v-variant, which is staged).
gpu_path() {
  case $1 in osu_allreduce | osu_reduce | osu_bcast | osu_allgather | osu_alltoall) return 0 ;; esac
  return 1
}

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
  case $bench in *reduce_scatter) args=(-m "$rs_sizes" -i 20 -x 5) ;; esac
  case $bench in *barrier) args=(-i 200 -x 20) ;; *) args+=(-c) ;; esac
  [ -n "${OSU_DEVICE:-}" ] && args+=(-d "$OSU_DEVICE")
  # The ranks are local: they get mpirun's environment (no -x, which Open MPI refuses beside
  # mca_base_env_list, set by the MPS helper of GPU machines).
  timeout "${OSU_TIMEOUT:-120}" mpirun --allow-run-as-root --oversubscribe -np "$np" \
    "${mca[@]}" sh -c \
    "COHORT_HOST_ID=osu-h\$((OMPI_COMM_WORLD_RANK / $per)) exec \"\$@\"" x "$osu/$bench" \
    "${args[@]}" >"$log" 2>&1
  local rc=$? why="" mpi_name=MPI_${bench#osu_}
  if [ $rc -ne 0 ]; then
    why="exit $rc"
  elif grep -qE '^[0-9]+ .*Fail' "$log"; then
    why="a row failed validation"
  elif [ "$mode" = ON ] && ! grep -qiE " $mpi_name [0-9]+ on Cohort" "$log"; then
    why="no $mpi_name ran on Cohort (the component's summary)"
  elif [ "$mode" = ON ] && [ -n "${OSU_DEVICE:-}" ] && gpu_path "$bench" &&
    ! grep -qiE " $mpi_name [0-9]+ on Cohort \([0-9]+ on its GPU path\)" "$log"; then
    why="$mpi_name on device memory did not run on Cohort's GPU path (the component's summary)"
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
        if [ $mode = OFF ] && [ -n "$off_skipped" ]; then
          echo "skip $b $shape OFF: $off_skipped" >>"$summary"
          skipped=$((skipped + 1))
        else
          one $mode "$shape" "$b" >>"$summary"
        fi
        tail -n 1 "$summary"
      done
    done
  done
done
echo "$passed passed, $failed failed, $skipped skipped (UCX_TLS=$UCX_TLS, sizes $sizes, reduce-scatter $rs_sizes${OSU_DEVICE:+, -d $OSU_DEVICE})" | tee -a "$summary"
[ $failed -eq 0 ]
