#!/bin/sh
# Gather, scatter, scan and exscan (host_colls_test) against MPI under mpirun, one TAP line
# per run: the whole matrix at 1-4 ranks, a quick one at 8 (oversubscribed) and over fake
# hosts (UCX); the v-variants' matrix at 1-5 ranks and over fake hosts, and their refusals.
# Environment: MPIRUN (default: mpirun), HOST_COLLS_TEST (default: ./host_colls_test).
HOST_COLLS_TEST=${HOST_COLLS_TEST:-./host_colls_test}
. "$(dirname "$0")/tap-mpirun.sh"
runs=""
for np in 1 2 3 4; do runs="$runs
$np matrix"; done
for np in 1 2 3 4 5; do runs="$runs
$np vmatrix"; done
runs="$runs
8 matrix --quick 1
4 matrix --quick 1 --per-node 2 @UCX_TLS=tcp,self
3 in-flight
8 in-flight
1 errors
4 errors
4 vmatrix --per-node 2 @UCX_TLS=tcp,self
1 verrors
3 verrors"
run_tap "$HOST_COLLS_TEST" 600 "$runs"
