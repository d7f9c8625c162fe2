#!/bin/bash
# Small allreduces on device buffers between fake hosts (issue 30's latency item), the pieces
# through host memory as lines (COHORT_STAGED_LINES_BYTES, the default) and as words and copies
# (COHORT_STAGED_LINES_BYTES=0), alternated, beside the wire and NCCL in the same run:
#   contrib/staged-latency.sh BUILD RESULTS
# 1. the wire: ucx_perftest tag_lat, 8 B, one way (UCX_TLS=tcp,self);
# 2. NCCL's 8 B allreduce over its socket transport (STAGED_LATENCY_TORCH: a Python with
#    PyTorch; skipped, and said, without it);
# 3. Cohort's host path, 8 B on host buffers;
# 4. Cohort on device buffers (not registered), stream-ordered and blocking, 8 B to 4 KB, at
#    2 x 1 and 2 x 2 (STAGED_LATENCY_SHAPES), lines then words, STAGED_LATENCY_REPEATS times.
# Needs a GPU and MPS for several ranks on it (started by the caller), and .devrt/env.sh
# sourced.  RESULTS gets one log per run and summary.txt.  Exit 1 if a run failed.
set -u
build=${1:?usage: contrib/staged-latency.sh BUILD RESULTS}
results=${2:?usage: contrib/staged-latency.sh BUILD RESULTS}
mkdir -p "$results"
source "$(dirname "$0")/gpu-common.sh"  # binary, quiet, perftest, fake_hosts
perf=$(binary tools/cohort_perf)
export UCX_TLS=tcp,self COHORT_ALLOW_SHARED_GPU=1
summary=$results/summary.txt
: >"$summary"
failed=0
note() { echo "$*" | tee -a "$summary"; }

lat=$(perftest tag_lat 8 20000 | awk '{print $4}')
note "the wire (ucx_perftest tag_lat 8 B, $UCX_TLS): ${lat:-?} us"
[ -n "$lat" ] || failed=1

if [ -n "${STAGED_LATENCY_TORCH:-}" ]; then
  if timeout 180 mpirun -np 2 --bind-to none "$STAGED_LATENCY_TORCH" \
    "$(dirname "$0")/nccl-wire-anchor.py" 1 8 >"$results/nccl-2x1.log" 2>&1; then
    nccl=$(awk '$1 == 8 {print $2}' "$results/nccl-2x1.log")
    note "NCCL 8 B allreduce, 2 x 1, socket transport: ${nccl:-?} us"
  else
    note "NCCL failed: see nccl-2x1.log"
    failed=1
  fi
else
  note "NCCL skipped: set STAGED_LATENCY_TORCH to a Python with PyTorch"
fi

# Out-of-place and in-place times (us) of BYTES in LOG.
times() { awk -v b="$2" '$1 == b && $2 ~ /^[0-9]+$/ {print $6 " / " $10; exit}' "$1"; }

if fake_hosts 2 1 "$results/host-2x1.log" -c allreduce -b 8 -e 8 -n 5000 -w 100 --check; then
  note "host path 8 B, 2 x 1 (out of place / in place): $(times "$results/host-2x1.log" 8) us"
else
  note "host path failed: see host-2x1.log"
  failed=1
fi

note "device buffers, not registered: us per call, out of place / in place"
note "shape mode form repeat | 8 B | 64 B | 512 B | 4 KB"
for shape in ${STAGED_LATENCY_SHAPES:-2x1 2x2}; do
  per=${shape#*x}
  np=$((${shape%x*} * per))
  for repeat in $(seq "${STAGED_LATENCY_REPEATS:-2}"); do
    for mode in stream blocking; do
      extra=()
      [ $mode = blocking ] && extra=(--blocking)
      for form in lines words; do
        lines=4096
        [ $form = words ] && lines=0
        log=$results/device-$shape-$mode-$form-$repeat.log
        if fake_hosts $np "$per" "$log" COHORT_STAGED_LINES_BYTES=$lines -m cuda --no-register \
          "${extra[@]}" -c allreduce -b 8 -e 4096 -f 8 -n 2000 -w 100 --check; then
          note "$shape $mode $form $repeat | $(times "$log" 8) | $(times "$log" 64) | $(times "$log" 512) | $(times "$log" 4096)"
        else
          note "$shape $mode $form $repeat: failed (see $(basename "$log"))"
          failed=1
        fi
      done
    done
  done
done
exit $failed
