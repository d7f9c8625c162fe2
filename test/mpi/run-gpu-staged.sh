#!/bin/sh
# coll_random on GPU device memory through the real CUDA driver, across fake hosts
# (COHORT_HOST_ID per rank, UCX over TCP between them): the collectives of a team that spans
# hosts run through host memory in pieces, blocking and stream-ordered on one or two streams
# (also captured into CUDA graphs, replayed three times), checked against MPI on host copies.
# Ranks share the GPU (run under MPS on a GPU machine: ../shared/device/README.md).  Skips where there is no CUDA driver with a device; the same
# runs on the tests' fake driver are in run-random.sh.
# Environment: MPIRUN, COLL_RANDOM (default ./coll_random), GPU_STAGED_RUNS (lines replacing
# the default ones).
COLL_RANDOM=${COLL_RANDOM:-./coll_random}
. "$(dirname "$0")/tap-mpirun.sh"
export COHORT_ALLOW_SHARED_GPU=1
runs=${GPU_STAGED_RUNS:-"2 --iters 3000 --seed 31 --per-node 1 --memory device @UCX_TLS=tcp,self
2 --iters 3000 --seed 32 --per-node 1 --stream 2 --max-count 3000000 @UCX_TLS=tcp,self
4 --iters 3000 --seed 33 --per-node 2 --stream 2 @UCX_TLS=tcp,self @COHORT_STAGED_CHUNK_BYTES=65536
6 --iters 2000 --seed 34 --per-node 2 --stream 1 @UCX_TLS=tcp,self
8 --iters 2000 --seed 35 --per-node 2 --stream 2 @UCX_TLS=tcp,self
4 --iters 3000 --seed 36 --per-node 2 --stream 1
2 --iters 1000 --seed 37 --per-node 1 --stream 2 --graph 3 --max-count 3000000 @UCX_TLS=tcp,self
4 --iters 1000 --seed 38 --per-node 2 --stream 1 --graph 3 @UCX_TLS=tcp,self @COHORT_STAGED_CHUNK_BYTES=65536"}
run_tap "$COLL_RANDOM" "${GPU_STAGED_LIMIT:-600}" "$runs" '^coll_random:.*mismatches'
