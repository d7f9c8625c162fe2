#!/bin/bash
# The registration cache through the Open MPI component on one GPU under MPS (issue 32), from a
# folder packed by contrib/gpu-pack.sh (BUILD_DIR) and the MPI runtime (.devrt):
#   contrib/reg-cache-check.sh BUILD_DIR RESULTS_DIR
# Runs, one file each in RESULTS_DIR: component_cache at 4 ranks (64 MB buffers reused, at an
# offset, freed and allocated again between rounds, every value checked; the summary counts
# the calls on cached buffers and the syncs) and at 2 ranks with a cache of one entry (every
# sync evicts); cohort_perf's 256 MB allreduce at 4 ranks, registered and not, stream-ordered
# and blocking, with the roofline; component_overhead's MPI_Allreduce through the component
# against cohort_allreduce on the same unregistered buffers at 1, 16 and 256 MB, with the
# cache and without (COHORT_REG_CACHE_ENTRIES=0), and with coll_cohort_uniform_memory; the
# other collectives the cache serves at 16 MB; the component's C test on device memory.
set -u
build=${1:-build}
R=${2:-/tmp/reg-cache}
mkdir -p "$R"
source .devrt/env.sh
export COHORT_ALLOW_SHARED_GPU=1 LD_LIBRARY_PATH=$PWD/$build/src/.libs:${LD_LIBRARY_PATH:-}
stamp() { echo "$(($(date +%s) - t0)) s: $*" >>"$R/times.txt"; }
t0=$(date +%s)
source .devrt/mps.sh start >"$R/mps.log" 2>&1
source "$(dirname "$0")/gpu-common.sh"
perf=$(binary tools/cohort_perf)
nvidia-smi -L >"$R/gpu.txt" 2>&1
path=$PWD/$build/_install/lib/cohort/openmpi:$OPAL_PREFIX/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
mca=(--mca mca_base_component_path "$path" --mca coll_cohort_verbose 1)
x=$PWD/$build/extra
timeout 240 env COLL_TEST_MEMORY=device mpirun -np 4 "${mca[@]}" "$x/cache" -b 67108864 -r 6 -k 5 >"$R/cache4.txt" 2>&1
echo "rc=$?" >>"$R/cache4.txt"
stamp cache4
timeout 120 env COLL_TEST_MEMORY=device COHORT_REG_CACHE_ENTRIES=1 mpirun -np 2 "${mca[@]}" "$x/cache" -b 16777216 -r 4 -k 3 \
  >"$R/cache2-lru.txt" 2>&1
echo "rc=$?" >>"$R/cache2-lru.txt"
stamp lru
P=(-m cuda -c allreduce -b 256M -e 256M -n 40 -w 3 --roofline)
for form in "" --blocking; do
  for reg in "" --no-register; do
    timeout 120 mpirun -np 4 "$perf" "${P[@]}" $form $reg >"$R/perf${form}${reg}.txt" 2>&1
    stamp "perf $form $reg"
  done
done
sizes=1048576,16777216,268435456
for rep in 1 2; do
  timeout 150 mpirun -np 4 "${mca[@]}" "$x/overhead" -m device -c allreduce -s $sizes -n 20 \
    >"$R/ovh-cache-$rep.txt" 2>&1
  timeout 150 env COHORT_REG_CACHE_ENTRIES=0 mpirun -np 4 "${mca[@]}" "$x/overhead" -m device \
    -c allreduce -s $sizes -n 20 >"$R/ovh-nocache-$rep.txt" 2>&1
  timeout 150 mpirun -np 4 "${mca[@]}" --mca coll_cohort_uniform_memory 1 "$x/overhead" -m device \
    -c allreduce -s $sizes -n 20 >"$R/ovh-uniform-$rep.txt" 2>&1
  stamp "overhead $rep"
done
for c in allgather alltoall reduce_scatter_block; do
  timeout 100 mpirun -np 4 "${mca[@]}" "$x/overhead" -m device -c $c -s 16777216 -n 20 \
    >"$R/ovh-$c.txt" 2>&1
  stamp "$c"
done
timeout 300 env COLL_TEST_MEMORY=device mpirun -np 4 "${mca[@]}" --mca coll_cohort_host 1 "$x/ctest" \
  >"$R/ctest4.txt" 2>&1
echo "rc=$?" >>"$R/ctest4.txt"
stamp ctest
source .devrt/mps.sh stop >>"$R/mps.log" 2>&1
grep -h 'component_cache: \|^summary: ' "$R"/cache*.txt "$R/ctest4.txt"
