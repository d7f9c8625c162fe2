#!/bin/sh
# NCCL's API on Cohort (nccl_api_test forks the ranks): one TAP line per run.  Without a GPU the
# tests' fake CUDA driver (FAKE_CUDA_DIR) serves device memory, each rank on a fake host of its
# own.  NCCL_API_TEST_REAL_CUDA=1 uses the machine's driver instead (the GPU machine, several
# ranks on one GPU: COHORT_ALLOW_SHARED_GPU=1 under MPS).  COHORT_TEST_NCCL_RUNS overrides the
# list ("scenario:ranks ...").
prog=${NCCL_API_TEST:-./nccl_api_test}
runs=${COHORT_TEST_NCCL_RUNS:-"colls:1 colls:2 colls:3 nonblocking:2 split:4 shrink:3 errors:2 \
missing:3 perf:1 perf:3"}
if [ -z "${NCCL_API_TEST_REAL_CUDA:-}" ]; then
  LD_LIBRARY_PATH=${FAKE_CUDA_DIR:-../mpi/fake-cuda}:${LD_LIBRARY_PATH:-}
  NCCL_API_TEST_FAKE_HOSTS=1
  NCCL_API_TEST_FAKE_CUDA=1
  export LD_LIBRARY_PATH NCCL_API_TEST_FAKE_HOSTS NCCL_API_TEST_FAKE_CUDA
fi
set -- $runs
echo "1..$#"
n=0
for run in $runs; do
  n=$((n + 1))
  scenario=${run%%:*}
  ranks=${run#*:}
  log=$(mktemp)
  timeout 200 "$prog" "$scenario" "$ranks" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "ok $n - $scenario, $ranks ranks"
  elif [ $rc -eq 77 ]; then
    echo "ok $n - $scenario, $ranks ranks # SKIP no CUDA driver or device"
  else
    echo "not ok $n - $scenario, $ranks ranks (exit $rc)"
    sed 's/^/# /' "$log"
  fi
  rm -f "$log"
done
exit 0
