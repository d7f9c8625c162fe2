#!/bin/sh
# Randomized collectives against MPI (coll_random) under mpirun, one TAP line per run, the
# 100k-collective run at 4 ranks included (seconds: most counts are small).  Over fake hosts
# (UCX), messages go direct from 64 KiB (COHORT_UCX_DIRECT_BYTES); one run sends every message
# of 64 bytes or more direct, one runs counts up to 3M (direct messages of many fragments).
# Environment: MPIRUN (default: mpirun), COLL_RANDOM (default: ./coll_random),
#              COHORT_RANDOM_RUNS (lines "NP ARGS [@ENV=VALUE]" replacing the default runs).
# Device memory comes from the tests' fake CUDA driver (FAKE_CUDA_DIR, from make check): between
# fake hosts, and within one host where the GPU path takes no GPU, it runs through host memory
# in pieces (COHORT_STAGED_CHUNK_BYTES small: many pieces, every slot reused), blocking and
# stream-ordered on one or two streams, and captured into CUDA graphs replayed three times.
COLL_RANDOM=${COLL_RANDOM:-./coll_random}
fake="@LD_LIBRARY_PATH=${FAKE_CUDA_DIR:-./fake-cuda}:${LD_LIBRARY_PATH:-}"
. "$(dirname "$0")/tap-mpirun.sh"
runs=${COHORT_RANDOM_RUNS:-"4 --iters 100000 --seed 42
2 --iters 20000 --seed 2
3 --iters 20000 --seed 3
8 --iters 10000 --seed 8
4 --iters 20000 --seed 9 @COHORT_SHM_SINGLE_COPY_BYTES=64
4 --iters 20000 --seed 5 --per-node 2 @UCX_TLS=tcp,self
5 --iters 20000 --seed 6 --per-node 3 @UCX_TLS=tcp,self
4 --iters 20000 --seed 11 --per-node 2 @UCX_TLS=tcp,self @COHORT_UCX_DIRECT_BYTES=64
3 --iters 2000 --seed 12 --max-count 3000000 --per-node 1 @UCX_TLS=tcp,self
2 --iters 4000 --seed 21 --per-node 1 --memory device @UCX_TLS=tcp,self $fake
3 --iters 4000 --seed 22 --per-node 1 --stream 2 --max-count 300000 @UCX_TLS=tcp,self @COHORT_STAGED_CHUNK_BYTES=4096 $fake
4 --iters 4000 --seed 23 --per-node 2 --stream 2 @UCX_TLS=tcp,self @COHORT_STAGED_CHUNK_BYTES=16384 $fake
6 --iters 2000 --seed 24 --per-node 2 --stream 1 @UCX_TLS=tcp,self $fake
3 --iters 2000 --seed 25 --stream 2 $fake
3 --iters 2000 --seed 26 --per-node 1 --stream 2 --graph 3 --max-count 200000 @UCX_TLS=tcp,self @COHORT_STAGED_CHUNK_BYTES=8192 $fake
4 --iters 2000 --seed 27 --per-node 2 --stream 1 --graph 3 @UCX_TLS=tcp,self $fake"}
# Each run's summary line ("coll_random: N collectives ... M mismatches") goes on its TAP line.
run_tap "$COLL_RANDOM" 1800 "$runs" '^coll_random:.*mismatches'
