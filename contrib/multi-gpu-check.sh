#!/bin/bash
# Issue 16's run on a machine of several GPUs (one device call per machine kind), one rank per
# GPU, no MPS; also runs (as a dry run of itself) on a machine of one GPU at one rank:
#   contrib/multi-gpu-check.sh BUILD_DIR RESULTS_DIR
# 1. The machine: nvidia-smi -L / topo -m / nvlink -s (and the NVLink count per GPU),
#    cohort_info --topo, and the topology a team of every GPU detects as XML ($RESULTS_DIR/
#    topo.xml: a new reference topology, test/data/topo/<gpu>-<n>gpu.xml as summary.txt says).
# 2. Correctness: gpu_test's suite (test/mpi/run-gpu-tests.sh) at the rank counts up to the
#    GPU count, and at the GPU count itself.
# 3. Performance, one run per comparison on the same buffers: cohort_perf -m cuda against NCCL
#    (NCCL_NVLS_ENABLE=0) for allreduce, allgather, reduce_scatter, broadcast and alltoall,
#    8 B - 1 GiB, eager and replayed from CUDA graphs, ending with the table of Cohort/NCCL
#    time ratios; team creation against ncclCommInitRank.
# Each comparison times 100 calls after 10 untimed (nccl-tests' 20 let one host hiccup of a VM
# double a small size's time).  Through the device tool, where at most 8 files come back, run
# it into a local folder and bring back one archive:
#   bash contrib/multi-gpu-check.sh gpucarry /tmp/multi; tar czf $OUT/multi.tgz -C /tmp multi
# The steps' own limits add up to more than the device tool's 10 minutes a command on a slow
# machine: MULTI_GPU_STEPS splits them over calls.  Exit status: 0, 1 when a step failed, 77
# without a GPU.
# MULTI_GPU_MAX (default 1G) bounds the sizes; MULTI_GPU_STEPS=suite,perf,team (default all
# three after the record) picks the parts.  Everything lands in RESULTS_DIR; summary.txt says
# what ran and its exit status.
set -u
build=${1:-build}
results=${2:-/tmp/cohort-multi-gpu}
max=${MULTI_GPU_MAX:-1G}
steps=${MULTI_GPU_STEPS:-suite,perf,team}
mkdir -p "$results"
rm -f "$results"/*.log "$results"/ratios.txt "$results"/topo.xml  # a reused folder starts empty
# The MPI runtime the device machines get (../shared/device/fetch-runtime.sh); elsewhere mpirun
# is on the PATH already.
[ -f .devrt/env.sh ] && source .devrt/env.sh
export LD_LIBRARY_PATH=$PWD/$build/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off: the comparison is with it off
source "$(dirname "$0")/gpu-common.sh"  # binary, quiet
perf=$(binary tools/cohort_perf)
info=$(binary tools/cohort_info)
run() {  # name title command...  (the command's output goes to $results/name.log)
  local name=$1 title=$2
  shift 2
  echo "=== $title" | tee -a "$results/summary.txt"
  "$@" 2>&1 | quiet >> "$results/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== exit $rc" | tee -a "$results/summary.txt"
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}
failed=0
wanted() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$gpus" -eq 0 ]; then
  echo "multi-gpu-check: no GPU (nvidia-smi -L lists none): nothing to run" | tee "$results/summary.txt"
  exit 77
fi
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//')
echo "# $gpus GPU(s), $model; one rank per GPU; NCCL_NVLS_ENABLE=0" > "$results/summary.txt"

# 1. The machine.
run machine "nvidia-smi -L, topo -m, nvlink -s" bash -c \
  'nvidia-smi -L; echo; nvidia-smi topo -m; echo; nvidia-smi nvlink -s'
run machine "NVLinks up per GPU" bash -c \
  "nvidia-smi nvlink -s | awk '/^GPU/ {gpu=\$2} / Link [0-9]+: [0-9.]+ GB\/s/ {n[gpu]++}
   END {for (g in n) print \"GPU \" g \" \" n[g] \" NVLinks up\"; if (length(n) == 0) print \"no NVLink up\"}'"
run machine "cohort_info --topo" "$info" --topo
xml="$results/topo.xml"
echo "# topo.xml: the reference topology test/data/topo/$model-${gpus}gpu.xml" >> "$results/summary.txt"
run machine "the plan of a team of $gpus rank(s), one per GPU" env COHORT_DEBUG=INFO \
  COHORT_DEBUG_SUBSYS=TOPO,GRAPH mpirun -np "$gpus" "$(binary test/mpi/team_test)" plan
run machine "the topology one rank detects (every GPU of the host), dumped to topo.xml" env \
  COHORT_TOPO_DUMP_FILE="$xml" mpirun -np 1 "$(binary test/mpi/team_test)" plan
run machine "cohort_info --topo-file of the dump (it reloads)" "$info" --topo --topo-file "$xml"

# 2. Correctness: every suite line of at most $gpus ranks, and $gpus ranks (the suite has lines
# of 1 to 4 ranks).
if wanted suite; then
  up_to="^($(seq -s '|' 1 "$gpus")) "
  extra=""
  [ "$gpus" -gt 4 ] && extra="$gpus allreduce
$gpus collectives --quick 1
$gpus allreduce --register 1 --big-log2 26
$gpus collectives --quick 1 --register 1
$gpus mixed
$gpus abort --rank 1"
  run suite "GPU suite, one rank per GPU (lines of <= $gpus ranks, then $gpus ranks)" env \
    MPIRUN=mpirun GPU_TEST="$(binary test/mpi/gpu_test)" COHORT_TEST_FILTER="$up_to" \
    GPU_TEST_EXTRA="$extra" GPU_TEST_LIMIT=300 bash test/mpi/run-gpu-tests.sh
fi

# 3. Performance against NCCL, then team creation.
if wanted perf; then
  run perf "cohort_perf vs NCCL, $gpus rank(s), 8 B - $max, eager and graph" timeout 480 \
    mpirun -np "$gpus" --bind-to core "$perf" -m cuda \
    -c allreduce,allgather,reduce_scatter,broadcast,alltoall -b 8 -e "$max" -f 2 -n 100 -w 10 \
    --vs-nccl --graph 20 --roofline --json "$results/perf-vs-nccl.json"
  # The ratio table alone (the end of the log), for the note.
  sed -n '/^# Cohort\/NCCL time, /,$p' "$results/perf.log" > "$results/ratios.txt"
fi
if wanted team; then
  run team "team creation vs ncclCommInitRank, $gpus rank(s)" timeout 120 \
    mpirun -np "$gpus" --bind-to core "$perf" --team-create --vs-nccl -n 10
fi
[ "$failed" -eq 0 ] || { echo "multi-gpu-check: $failed step(s) failed (summary.txt)"; exit 1; }
