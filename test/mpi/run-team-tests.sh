#!/bin/sh
# Runs every team_test scenario under mpirun (oversubscribed: tests pass with 8 ranks on 2
# cores) and prints one TAP line per run, for automake's tap-driver.sh.
# Environment: MPIRUN (default: mpirun), TEAM_TEST (default: ./team_test),
#              COHORT_TEST_FILTER (a grep -E pattern over the test names, to run a subset).
TEAM_TEST=${TEAM_TEST:-./team_test}
TOPO_DATA=${TOPO_DATA:-$(cd "$(dirname "$0")/../data/topo" && pwd)}
. "$(dirname "$0")/tap-mpirun.sh"

tests=""
add() { tests="$tests
$*"; }
for np in 1 2 3 4 8; do
  for s in create split nonblocking abort two-posted bad-input oob; do add "$np $s"; done
  add "$np fake-nodes --per-node 2"
done
add "8 fake-nodes --interleave 3"
add "6 fake-nodes --per-node 4"
add "1 cycles --count 200"
add "3 cycles --count 200"
for np in 2 4 8; do add "$np cycles --count 1000"; done
for np in 2 3 4 8; do
  add "$np missing --skip 0 --timeout 2"
  add "$np missing --skip $((np / 2)) --timeout 2"
done
add "3 split-missing --skip 0 --timeout 2"
add "4 split-missing --skip 2 --timeout 2"
for phase in check-in peer-info local-ranks ready; do
  add "3 inject --phase $phase --rank 1 @COHORT_INJECT_FAILURE=$phase:1"
done
add "8 inject --phase peer-info --rank 5 @COHORT_INJECT_FAILURE=peer-info:5"
add "2 inject --phase ready --rank 0 @COHORT_INJECT_FAILURE=ready:0"
for phase in check-in peer-info local-ranks topology graphs align connect device-setup ready; do
  add "4 stall --phase $phase --rank 2 --timeout 1.5 @COHORT_INJECT_FAILURE=$phase:2:stall"
done
for np in 1 2 3 4 8; do add "$np plan"; done
add "8 plan --per-node 4"
add "6 plan --per-node 4"
add "8 plan --channels 6 --intra NVL @COHORT_TOPO_FILE=$TOPO_DATA/h100-8gpu-nvswitch.xml"
add "8 plan --per-node 4 --intra NVL @COHORT_TOPO_FILE=$TOPO_DATA/h100-8gpu-nvswitch.xml"
add "8 plan --intra SYS @COHORT_TOPO_FILE=$TOPO_DATA/pcie-8gpu.xml"
add "4 plan --intra NVL @COHORT_TOPO_FILE=$TOPO_DATA/v100-4gpu-allpairs.xml"
add "4 plan-graph-file @COHORT_TOPO_FILE=$TOPO_DATA/h100-8gpu-nvswitch.xml"
add "3 plan-fails --expect phase_align,different_from_rank_0's,ranks_1;,first_is_rank_1 @COHORT_INJECT_FAILURE=align:1:skew"
add "4 plan-fails --expect phase_topology,FILE:,truncated.xml_line_ @COHORT_TOPO_FILE=$TOPO_DATA/../topo-bad/truncated.xml"
for phase in topology graphs align connect device-setup; do
  add "3 inject --phase $phase --rank 1 @COHORT_INJECT_FAILURE=$phase:1"
done
for np in 1 2 3 4 8; do add "$np coll"; done
add "3 coll-missing --skip 1 @COHORT_COLL_TIMEOUT=1"
for np in 1 3; do add "$np algo-env"; done
for np in 1 2 3 4 8; do add "$np coll-post"; done
add "4 coll-post --per-node 2 @UCX_TLS=tcp,self"
for np in 1 2 3 4 8; do add "$np p2p"; done
add "5 p2p --per-node 3 @UCX_TLS=tcp,self"
# Each allreduce algorithm on every size (the defaults pick direct only for small ones).
add "4 coll --quick 1 @COHORT_COLL_ALGO=allreduce=direct"
add "3 coll --quick 1 @COHORT_COLL_ALGO=allreduce=ring"
# The splittable algorithms on both channels of the plan (each its own part of the buffer).
add "4 coll --quick 1 @COHORT_COLL_ALGO=allreduce=ring*2,reduce=chain*2,broadcast=chain*2"
add "6 coll --quick 1 --per-node 3 @UCX_TLS=tcp,self COHORT_COLL_ALGO=allreduce=ring*2,broadcast=chain*2"
# Single copy within a host for nearly every message (and never), over the whole matrix.
add "4 coll @COHORT_SHM_SINGLE_COPY_BYTES=8"
add "3 coll --quick 1 @COHORT_SHM_SINGLE_COPY_BYTES=0"
add "4 p2p @COHORT_SHM_SINGLE_COPY_BYTES=8"
# Fake hosts: bytes between them cross real TCP sockets through UCX (uneven ranks per host).
add "4 coll --per-node 3 @UCX_TLS=tcp,self"
add "6 coll --per-node 4 @UCX_TLS=tcp,self"
add "5 coll --per-node 2 @UCX_TLS=tcp,self COHORT_COLL_ALGO=allreduce=hier"
add "2 before-init"
add "3 after-finalize"
add "3 abort-one --rank 1"
add "4 abort-one --rank 0"
add "2 gpu-duplicate"
add "2 gpu-shared"
add "2 gpu-coll"

if [ -n "$COHORT_TEST_FILTER" ]; then
  tests=$(printf '%s\n' "$tests" | grep -E -- "$COHORT_TEST_FILTER")
fi
run_tap "$TEAM_TEST" 240 "$tests"
