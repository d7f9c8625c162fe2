#!/bin/sh
# Runs transport_test (collectives over a transport registered by the test) at 1, 2, 3 and
# 4 ranks, one TAP line each.  Environment: MPIRUN, TRANSPORT_TEST (default ./transport_test).
TRANSPORT_TEST=${TRANSPORT_TEST:-./transport_test}
. "$(dirname "$0")/tap-mpirun.sh"
run_tap "$TRANSPORT_TEST" 120 "1 collectives
2 collectives
3 collectives
4 collectives" "sent .* messages through the test transport"
