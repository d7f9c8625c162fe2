#!/bin/sh
# Randomized send/recv groups (p2p_random) under mpirun, one TAP line per run: on host memory
# within a host and across fake hosts (UCX), and on device memory from the tests' fake CUDA
# driver (FAKE_CUDA_DIR, from make check), blocking and stream-ordered, which run through host
# memory.  On a GPU machine P2P_REAL_CUDA=1 takes the real driver instead (ranks share the
# GPU: run under MPS, ../shared/device/README.md).
# Environment: MPIRUN (default: mpirun), P2P_RANDOM (default: ./p2p_random),
#              COHORT_P2P_RUNS (lines "NP ARGS [@ENV=VALUE]" replacing the default runs).
P2P_RANDOM=${P2P_RANDOM:-./p2p_random}
fake="@LD_LIBRARY_PATH=${FAKE_CUDA_DIR:-./fake-cuda}:${LD_LIBRARY_PATH:-}"
[ "${P2P_REAL_CUDA:-0}" = 1 ] && fake="@COHORT_ALLOW_SHARED_GPU=1"
. "$(dirname "$0")/tap-mpirun.sh"
runs=${COHORT_P2P_RUNS:-"1 --iters 500 --seed 1
4 --iters 3000 --seed 2
3 --iters 2000 --seed 3 --per-node 1 @UCX_TLS=tcp,self
2 --iters 1500 --seed 4 --per-node 1 --memory device @UCX_TLS=tcp,self $fake
4 --iters 1500 --seed 5 --per-node 2 --stream 2 @UCX_TLS=tcp,self $fake
3 --iters 1500 --seed 6 --stream 3 $fake
8 --iters 1000 --seed 8 --per-node 2 --stream 1 @UCX_TLS=tcp,self $fake
5 --iters 800 --seed 7 --per-node 2 --memory device --stream 1 --max-count 300000 @UCX_TLS=tcp,self $fake
4 --iters 600 --seed 9 --per-node 2 --stream 2 --graph 3 @UCX_TLS=tcp,self $fake"}
run_tap "$P2P_RANDOM" 900 "$runs" '^p2p_random:.*bad bytes'
