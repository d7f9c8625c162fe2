#!/bin/sh
# Runs failure_test's scenarios under mpirun (oversubscribed), one TAP line per run: aborts of
# ready teams with the others inside allreduce / barrier / send-recv (also across 2 to 8 fake
# hosts), aborts after 1, 2 and 5 creation polls, a UCX endpoint failure between fake hosts (also
# both on device memory), and counts that overflow.
# Environment: MPIRUN (default: mpirun), FAILURE_TEST (default: ./failure_test),
#              COHORT_TEST_FILTER (a grep -E pattern over the test names, to run a subset).
FAILURE_TEST=${FAILURE_TEST:-./failure_test}
. "$(dirname "$0")/tap-mpirun.sh"

tests=""
add() { tests="$tests
$*"; }
for np in 2 4 8; do
  for op in allreduce barrier p2p; do add "$np abort-ready --op $op --rank $((np - 1))"; done
done
add "4 abort-ready --op allreduce --rank 1 --thread 1"
add "3 abort-ready --op barrier --rank 0 --per-node 2 @UCX_TLS=tcp,self"
# Across 4 and 8 fake hosts a rank has UCX channels to the peers its plan links it to only:
# the abort reaches the others passed on, and a channel that breaks first waits for it.
for per_node in 2 1; do
  for op in barrier allreduce; do
    add "8 abort-ready --op $op --rank 5 --per-node $per_node @UCX_TLS=tcp,self"
  done
done
for polls in 1 2 5; do
  for np in 2 4 8; do add "$np abort-create --polls $polls --rank $((np / 2))"; done
done
add "4 ucx-fail --per-node 2 @UCX_TLS=tcp,self COHORT_INJECT_UCX_FAILURE=1:2:3"
add "6 ucx-fail --per-node 3 @UCX_TLS=tcp,self COHORT_INJECT_UCX_FAILURE=4:0:1"
# Device memory between fake hosts (through host memory), on the tests' fake CUDA driver
# (FAKE_CUDA_DIR, from make check) or, on a GPU machine with FAILURE_TEST_REAL_CUDA=1, the real one.
cuda="LD_LIBRARY_PATH=${FAKE_CUDA_DIR:-./fake-cuda}:${LD_LIBRARY_PATH:-}"
[ "${FAILURE_TEST_REAL_CUDA:-0}" = 1 ] && cuda="COHORT_ALLOW_SHARED_GPU=1"
add "4 abort-ready --op allreduce --rank 3 --per-node 2 --memory device @UCX_TLS=tcp,self $cuda"
add "4 abort-ready --op allreduce --rank 0 --per-node 2 --memory device --stream 1 @UCX_TLS=tcp,self $cuda"
add "3 abort-ready --op barrier --rank 1 --per-node 1 --memory device --stream 1 @UCX_TLS=tcp,self $cuda"
add "4 abort-ready --op p2p --rank 3 --per-node 2 --memory device @UCX_TLS=tcp,self $cuda"
add "3 abort-ready --op p2p --rank 0 --per-node 1 --memory device --stream 1 @UCX_TLS=tcp,self $cuda"
add "4 ucx-fail --per-node 2 --memory device @UCX_TLS=tcp,self COHORT_INJECT_UCX_FAILURE=1:2:3 $cuda"
for np in 2 4 8; do add "$np overflow"; done

if [ -n "$COHORT_TEST_FILTER" ]; then
  tests=$(printf '%s\n' "$tests" | grep -E -- "$COHORT_TEST_FILTER")
fi
run_tap "$FAILURE_TEST" 120 "$tests"
