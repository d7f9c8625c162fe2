#!/bin/sh
# Runs gpu_test (collectives on GPU device memory) at 1-4 ranks of one host, one TAP line
# each; ranks outnumbering GPUs share them (COHORT_ALLOW_SHARED_GPU=1: run under MPS, see
# ../shared/device/README.md, or kernels of different ranks take turns and run slowly).
# Skips with the reason where there is no CUDA build or no GPU.
# Environment: MPIRUN, GPU_TEST (default ./gpu_test), COHORT_TEST_FILTER (grep -E on the
# lines below, "NP ARGS"), GPU_TEST_EXTRA (more such lines, after the filter: e.g. the rank
# count of a machine of 8 GPUs, one rank each).
GPU_TEST=${GPU_TEST:-./gpu_test}
. "$(dirname "$0")/tap-mpirun.sh"
if [ ! -x "$GPU_TEST" ]; then
  echo "1..0 # SKIP this Cohort was built without CUDA (no gpu_test)"
  exit 0
fi
export COHORT_ALLOW_SHARED_GPU=1
tests="1 allreduce
2 allreduce
3 allreduce --quick 1
3 allreduce --quick 1 --offset 1
2 allreduce --quick 1 @COHORT_COLL_ALGO=allreduce@cuda-device=twoshot
9 allreduce --quick 1
4 allreduce
2 collectives
3 collectives --quick 1
4 collectives --quick 1
3 collectives --quick 1 --offset 1
9 collectives --quick 1
2 collectives --quick 1 @COHORT_COLL_ALGO=broadcast@cuda-device=pipelined,reduce@cuda-device=pipelined,allgather@cuda-device=pipelined,reduce_scatter@cuda-device=pipelined,alltoall@cuda-device=pipelined
2 mixed
4 mixed
2 pipeline
4 pipeline
2 refusals
2 registration
4 registration
2 allreduce --quick 1 --register 1
4 allreduce --quick 1 --register 1 --offset 1
3 allreduce --quick 1 --register 2
4 allreduce --register 1 --big-log2 26
2 collectives --quick 1 --register 1
4 collectives --quick 1 --register 1 --offset 1
3 collectives --quick 1 --register 2
4 mixed --register 1
2 no-p2p @COHORT_INJECT_NO_P2P=1
3 no-p2p @COHORT_INJECT_NO_P2P=0
2 abort
4 abort --rank 1
3 missing @COHORT_COLL_TIMEOUT=2"
if [ -n "${COHORT_TEST_FILTER:-}" ]; then
  tests=$(printf '%s\n' "$tests" | grep -E "$COHORT_TEST_FILTER")
fi
[ -n "${GPU_TEST_EXTRA:-}" ] && tests=$(printf '%s\n%s\n' "$tests" "$GPU_TEST_EXTRA")
run_tap "$GPU_TEST" "${GPU_TEST_LIMIT:-900}" "$tests" "on [0-9]* ranks: PASS"
