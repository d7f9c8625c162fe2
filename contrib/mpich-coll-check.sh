#!/usr/bin/env bash
# Run MPICH's collective test suite (test/mpi/coll of pmodels/mpich) through
# Open MPI twice -- without the Cohort coll component (OFF) and with it (ON) --
# and report every test that passes OFF but fails or hangs ON.
#
# Usage: contrib/mpich-coll-check.sh MPICH_TEST_MPI_DIR COMPONENT_DIR RESULTS_DIR
#
#   MPICH_TEST_MPI_DIR  a copy of MPICH's test/mpi folder (coll/, util/, include/,
#                       dtpools/ ...), e.g. from
#                       git -C MPICH_REPO archive HEAD test/mpi | tar -x -C DIR
#   COMPONENT_DIR       the folder holding mca_coll_cohort.so, e.g.
#                       build/_install/lib/cohort/openmpi; its libcohort.so.0 is
#                       looked for in COMPONENT_DIR/../.. (put on LD_LIBRARY_PATH)
#   RESULTS_DIR         where test binaries, per-run output and summary.txt go
#
# Nothing is downloaded. Tests are built with Open MPI's mpicc against MPICH's
# test utilities (util/mtest*.c, util/run_mpitests.c, dtpools/src/*.c), using a
# minimal mpitestconf.h written into RESULTS_DIR/build/include (MPICH's default
# configure: USE_STRICT_MPI not set, no GPU support) and an mtest_mpix.h that
# maps MPI_*_init (persistent collectives) to Open MPI 4's MPIX_*_init and the
# removed MPI_Errhandler_set to MPI_Comm_set_errhandler. A test that does not
# compile or link is reported as not-built with its first error line.
#
# Each runnable line of coll/testlist.in (comments, blank lines and lines with
# env= MPICH CVAR settings are skipped) is run with np=min(np,8), its arg=
# arguments, and timeLimit= (default 180 s) enforced by timeout(1):
#   OFF: mpirun --allow-run-as-root --oversubscribe -np N  (component not on the
#        component path, i.e. plain Open MPI; MPICH_OFF_MODE=disabled instead
#        puts it on the path with --mca coll_cohort_enable 0)
#   ON:  mpirun --allow-run-as-root --oversubscribe -np N
#        --mca mca_base_component_path COMPONENT_DIR:<default> --mca coll_cohort_host 1
# A run passes when mpirun exits 0 and stdout has a line "No Errors"; it hangs
# when timeout killed it (exit 124, or 137 once the limit was reached: a
# SIGKILL before it, e.g. from the OOM killer, is a failure); else it fails.
#
# Both runs of a line are done back to back. testlist.in's mem= is not enforced
# (gather_big asks for 20 GB). stdout, stderr and the command of every run are
# kept in RESULTS_DIR/runs/{OFF,ON}/L<line>-<name>-np<np>[-<args>].{out,err,cmd}.
# Writes RESULTS_DIR/summary.txt (also printed) and RESULTS_DIR/results.tsv;
# the regressions there show the first 3 lines of the ON run's stderr (Open
# MPI's "-----" separator lines left out).
# Exit status: 0 when no regressions, 1 when there are regressions, 2 on usage
# or setup errors.
#
# Optional environment knobs:
#   MPICH_TESTS="coll7 scattern"  run only these test names
#   MPICH_ON_MCA="--mca x y ..."  extra mpirun arguments for the ON run
#   MPICH_MODES="OFF ON"          which modes to run now (default both; empty:
#                                 build and summarise only); a mode not run
#                                 reuses the results already in RESULTS_DIR
#                                 from an earlier invocation
#   MPICH_OFF_MODE=absent|disabled  see above (default absent)
#   MPICH_MAX_NP=8                np cap
#   MPICH_DEFAULT_TIMEOUT=180     per-run limit when the line has no timeLimit=
#   MPICH_MPIRUN_ARGS="..."       extra mpirun arguments for both modes
#   MPICH_CFLAGS="-O2 -g"         compiler flags for the tests
#   MPICC, MPIRUN, OMPI_INFO      tools to use (default: from PATH)

set -u

usage() {
    sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

die() {
    echo "mpich-coll-check: $*" >&2
    exit 2
}

[ $# -eq 3 ] || usage
[ -f "$1/coll/testlist.in" ] || die "$1 is not MPICH's test/mpi folder (no coll/testlist.in)"
[ -d "$2" ] || die "component folder $2 does not exist"
mkdir -p "$3" || die "cannot create $3"

SRC=$(cd "$1" && pwd)
COMP=$(cd "$2" && pwd)
RES=$(cd "$3" && pwd)
B=$RES/build
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
OMPI_INFO=${OMPI_INFO:-ompi_info}
MAX_NP=${MPICH_MAX_NP:-8}
DEFAULT_TL=${MPICH_DEFAULT_TIMEOUT:-180}
MODES=${MPICH_MODES-OFF ON}
OFF_MODE=${MPICH_OFF_MODE:-absent}
read -r -a ON_MCA <<<"${MPICH_ON_MCA:-}"
read -r -a COMMON_ARGS <<<"${MPICH_MPIRUN_ARGS:-}"

case $OFF_MODE in absent | disabled) ;; *) die "MPICH_OFF_MODE must be absent or disabled" ;; esac
for m in $MODES; do
    case $m in OFF | ON) ;; *) die "MPICH_MODES may only hold OFF and ON" ;; esac
done
for t in "$MPICC" "$MPIRUN" "$OMPI_INFO" timeout; do
    command -v "$t" >/dev/null 2>&1 || die "$t not found"
done

mode_wanted() {
    case " $MODES " in *" $1 "*) return 0 ;; esac
    return 1
}

# --------------------------------------------------------------------------
# Open MPI settings
# --------------------------------------------------------------------------
DEFAULT_PATH=$("$OMPI_INFO" --parsable --param mca base --level 9 |
    sed -n 's/^mca:mca:base:param:mca_base_component_path:value://p' | tr -d '"')
[ -n "$DEFAULT_PATH" ] || die "could not read mca_base_component_path from $OMPI_INFO"
COMP_PATH="$COMP:$DEFAULT_PATH"
COMP_LIBDIR=$(cd "$COMP/../.." && pwd)
export LD_LIBRARY_PATH="$COMP_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_MCA_mpi_yield_when_idle=1

BASE_ARGS=(--allow-run-as-root --oversubscribe "${COMMON_ARGS[@]}" -x LD_LIBRARY_PATH)
if [ "$OFF_MODE" = disabled ]; then
    OFF_ARGS=(--mca mca_base_component_path "$COMP_PATH" --mca coll_cohort_enable 0)
    OFF_DESC="component on the path but disabled (--mca coll_cohort_enable 0)"
else
    OFF_ARGS=()
    OFF_DESC="component absent (Open MPI's default component path)"
fi
ON_ARGS=(--mca mca_base_component_path "$COMP_PATH" --mca coll_cohort_host 1 "${ON_MCA[@]}")

# --------------------------------------------------------------------------
# Parse coll/testlist.in
# --------------------------------------------------------------------------
# Fields per entry (parallel arrays): name, np (capped), listed np, args,
# time limit, line number in testlist.in (names the result files, so results
# of runs with different MPICH_TESTS selections can be combined).
T_NAME=() T_NP=() T_NP0=() T_ARGS=() T_TL=() T_LINE=()
SKIPPED_ENV=0 lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%%#*}
    read -r -a tok <<<"$line"
    [ ${#tok[@]} -ge 1 ] || continue
    name=${tok[0]}
    np=${tok[1]:-1}
    args="" tl=$DEFAULT_TL env=0
    for kv in "${tok[@]:2}"; do
        case $kv in
        arg=*) args="${args:+$args }${kv#arg=}" ;;
        timeLimit=*) tl=${kv#timeLimit=} ;;
        env=*) env=1 ;;
        *) ;; # mem=, xfail= ... are informational here
        esac
    done
    if [ $env -eq 1 ]; then
        SKIPPED_ENV=$((SKIPPED_ENV + 1))
        continue
    fi
    if [ -n "${MPICH_TESTS:-}" ]; then
        case " $MPICH_TESTS " in *" $name "*) ;; *) continue ;; esac
    fi
    T_NAME+=("$name")
    T_LINE+=("$lineno")
    T_NP0+=("$np")
    [ "$np" -gt "$MAX_NP" ] && np=$MAX_NP
    T_NP+=("$np")
    T_ARGS+=("$args")
    T_TL+=("$tl")
done <"$SRC/coll/testlist.in"
NT=${#T_NAME[@]}
[ "$NT" -gt 0 ] || die "no test selected from $SRC/coll/testlist.in"

# --------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------
mkdir -p "$B/include" "$B/dtpools/include" "$B/obj" "$B/bin" "$B/log" "$RES/runs/OFF" "$RES/runs/ON" "$RES/work"

# write FILE from stdin, keeping the old file (and its time stamp) if unchanged
put() {
    cat >"$1.tmp"
    if cmp -s "$1.tmp" "$1"; then rm -f "$1.tmp"; else mv -f "$1.tmp" "$1"; fi
}

# Replaces what MPICH's test configure writes. Only macros the coll tests, the
# util sources and the headers test for are set, for gcc + glibc + Open MPI.
put "$B/include/mpitestconf.h" <<'EOF'
/* Minimal mpitestconf.h for building MPICH's test/mpi/coll with Open MPI's
 * mpicc (written by contrib/mpich-coll-check.sh; MPICH's configure is not run). */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define STDC_HEADERS 1
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STRING_H 1
#define HAVE_MEMORY_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_PTHREAD_H 1
#define HAVE_STRDUP 1
#define HAVE_USLEEP 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_ATOMIC 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_SPAWN 1
#define HAVE_MPI_IO 1
#define POINTERINT_t long
#define SIZEOF_VOID_P 8
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_SHORT 2
/* mpithreadtest.h: THREAD_PACKAGE_POSIX (its value there is 2) */
#define THREAD_PACKAGE_NAME 2
/* not defined: USE_STRICT_MPI (MPICH's default configure), HAVE_CUDA,
 * HAVE_ZE, HAVE_HIP (no GPU memory types), MPICH (not MPICH) */
#endif
EOF

# mtest_mpix.h: MPICH generates it to map new MPI names onto MPIX_ ones. Open
# MPI 4.x has the MPI-4 persistent collectives as MPIX_*_init in mpi-ext.h.
# Open MPI 4.x also turns the MPI-1 name MPI_Errhandler_set (used by opprod.c
# and opsum.c) into a compile error; map it to MPI_Comm_set_errhandler.
put "$B/include/mtest_mpix.h" <<'EOF'
/* written by contrib/mpich-coll-check.sh */
#ifndef MTEST_MPIX_H_INCLUDED
#define MTEST_MPIX_H_INCLUDED
#if defined(OPEN_MPI) && defined(MPI_Errhandler_set)
#undef MPI_Errhandler_set
#define MPI_Errhandler_set MPI_Comm_set_errhandler
#endif
#if defined(OPEN_MPI) && MPI_VERSION < 4
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Allgatherv_init MPIX_Allgatherv_init
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Alltoall_init MPIX_Alltoall_init
#define MPI_Alltoallv_init MPIX_Alltoallv_init
#define MPI_Alltoallw_init MPIX_Alltoallw_init
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Exscan_init MPIX_Exscan_init
#define MPI_Gather_init MPIX_Gather_init
#define MPI_Gatherv_init MPIX_Gatherv_init
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#define MPI_Neighbor_allgatherv_init MPIX_Neighbor_allgatherv_init
#define MPI_Neighbor_alltoall_init MPIX_Neighbor_alltoall_init
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#define MPI_Neighbor_alltoallw_init MPIX_Neighbor_alltoallw_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init
#define MPI_Scan_init MPIX_Scan_init
#define MPI_Scatter_init MPIX_Scatter_init
#define MPI_Scatterv_init MPIX_Scatterv_init
#endif
#endif
#endif
EOF

# dtpools: its internal header includes "../dtpoolsconf.h", so use copies of
# its headers next to a dtpoolsconf.h of our own (the source tree stays as is).
for h in "$SRC"/dtpools/include/*.h; do
    put "$B/dtpools/include/${h##*/}" <"$h"
done
put "$B/dtpools/dtpoolsconf.h" <<'EOF'
/* written by contrib/mpich-coll-check.sh */
#ifndef DTPOOLSCONF_H_INCLUDED
#define DTPOOLSCONF_H_INCLUDED
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_LIMITS_H 1
#define HAVE_STDINT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_STRDUP 1
#define HAVE_MEMSET 1
#endif
EOF

CFLAGS=${MPICH_CFLAGS:--O2 -g}
read -r -a CFLAGS_A <<<"$CFLAGS"
CPPFLAGS_A=(-I"$B/include" -I"$SRC/include" -I"$B/dtpools/include")

# first compiler error line of a build log (command lines there start with "+ ")
first_error() {
    local l
    l=$(grep -v '^+ ' "$1" | grep -m1 -E 'error|undefined reference')
    [ -n "$l" ] || l=$(grep -v '^+ ' "$1" | grep -m1 .)
    printf '%s\n' "${l:-unknown build failure}"
}

# compile the sources $3.. into static library $1 (log $2); 0 on success
build_lib() {
    local lib=$1 log=$2 src obj objs=() fresh=1
    shift 2
    for src in "$@"; do
        [ "$lib" -nt "$src" ] || fresh=0
    done
    for src in "$B"/include/*.h "$B"/dtpools/include/*.h "$B"/dtpools/dtpoolsconf.h; do
        [ "$lib" -nt "$src" ] || fresh=0
    done
    [ $fresh -eq 1 ] && return 0
    rm -f "$lib"
    : >"$log"
    for src in "$@"; do
        obj=$B/obj/$(basename "$(dirname "$src")")_$(basename "$src" .c).o
        echo "+ $MPICC ${CFLAGS_A[*]} ${CPPFLAGS_A[*]} -c $src -o $obj" >>"$log"
        "$MPICC" "${CFLAGS_A[@]}" "${CPPFLAGS_A[@]}" -c "$src" -o "$obj" >>"$log" 2>&1 || return 1
        objs+=("$obj")
    done
    ar rcs "$lib" "${objs[@]}" >>"$log" 2>&1
}

echo "== building in $B"
UTIL_ERR="" DTP_ERR=""
if ! build_lib "$B/libmtest.a" "$B/log/_libmtest.log" \
    "$SRC/util/mtest.c" "$SRC/util/mtest_common.c" "$SRC/util/mtest_single.c"; then
    UTIL_ERR="util (libmtest): $(first_error "$B/log/_libmtest.log")"
    echo "   $UTIL_ERR"
fi
if ! build_lib "$B/librun_mpitests.a" "$B/log/_run_mpitests.log" "$SRC/util/run_mpitests.c"; then
    UTIL_ERR="${UTIL_ERR:+$UTIL_ERR; }util/run_mpitests.c: $(first_error "$B/log/_run_mpitests.log")"
    echo "   $UTIL_ERR"
fi
if ! build_lib "$B/libdtpools.a" "$B/log/_libdtpools.log" "$SRC"/dtpools/src/*.c; then
    DTP_ERR="dtpools: $(first_error "$B/log/_libdtpools.log")"
    echo "   $DTP_ERR (tests that need it will not link)"
fi

# build one test; prints nothing, leaves $B/bin/NAME or $B/log/NAME.err
build_test() {
    local name=$1 src=$SRC/coll/$1.c bin=$B/bin/$1 log=$B/log/$1.log
    local libs=() f
    rm -f "$B/log/$name.err"
    if [ ! -f "$src" ]; then
        echo "no source file coll/$name.c" >"$B/log/$name.err"
        return 1
    fi
    if [ -n "$UTIL_ERR" ]; then
        echo "$UTIL_ERR" >"$B/log/$name.err"
        return 1
    fi
    # tests without their own main() are run() functions for run_mpitests.c
    grep -qE '^[[:space:]]*int[[:space:]]+main[[:space:]]*\(' "$src" || libs+=("$B/librun_mpitests.a")
    libs+=("$B/libmtest.a")
    [ -f "$B/libdtpools.a" ] && libs+=("$B/libdtpools.a")
    if [ -x "$bin" ]; then
        local fresh=1
        for f in "$src" "${libs[@]}"; do [ "$bin" -nt "$f" ] || fresh=0; done
        [ $fresh -eq 1 ] && return 0
    fi
    rm -f "$bin"
    echo "+ $MPICC ${CFLAGS_A[*]} ${CPPFLAGS_A[*]} -o $bin $src ${libs[*]} -lm -lpthread" >"$log"
    if ! "$MPICC" "${CFLAGS_A[@]}" "${CPPFLAGS_A[@]}" -o "$bin" "$src" "${libs[@]}" -lm -lpthread >>"$log" 2>&1; then
        first_error "$log" >"$B/log/$name.err"
        return 1
    fi
}

declare -A BUILT=()
nbuilt=0 nfail=0
for name in $(printf '%s\n' "${T_NAME[@]}" | sort -u); do
    if build_test "$name"; then
        BUILT[$name]=1
        nbuilt=$((nbuilt + 1))
    else
        BUILT[$name]=0
        nfail=$((nfail + 1))
        echo "   not built: $name: $(cat "$B/log/$name.err")"
    fi
done
echo "   $nbuilt programs built, $nfail not built"

# --------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------
run_id() { # index -> file name stem
    local i=$1 a
    a=$(printf '%s' "${T_ARGS[$i]}" | tr -c 'A-Za-z0-9=,.+-' '_')
    printf 'L%03d-%s-np%s%s' "${T_LINE[$i]}" "${T_NAME[$i]}" "${T_NP0[$i]}" "${a:+-$a}"
}

# kill what is left of a timed-out run: processes running this test binary
kill_leftovers() {
    local bin=$1 p exe pids=()
    for p in /proc/[0-9]*; do
        exe=$(readlink "$p/exe" 2>/dev/null) || continue
        [ "$exe" = "$bin" ] && pids+=("${p#/proc/}")
    done
    [ ${#pids[@]} -gt 0 ] && kill -9 "${pids[@]}" 2>/dev/null
    return 0
}

run_one() { # mode index
    local mode=$1 i=$2 name=${T_NAME[$2]} np=${T_NP[$2]} tl=${T_TL[$2]}
    local stem argv=() rc t0 t1 res
    stem=$RES/runs/$mode/$(run_id "$i")
    rm -f "$stem".*
    if [ "${BUILT[$name]}" != 1 ]; then
        echo "not-built" >"$stem.res"
        return
    fi
    read -r -a argv <<<"${T_ARGS[$i]}"
    local cmd=(timeout -k 20 "$tl" "$MPIRUN" "${BASE_ARGS[@]}" -np "$np")
    if [ "$mode" = ON ]; then cmd+=("${ON_ARGS[@]}"); else cmd+=("${OFF_ARGS[@]}"); fi
    cmd+=("$B/bin/$name" "${argv[@]}")
    printf '%q ' "${cmd[@]}" >"$stem.cmd"
    echo >>"$stem.cmd"
    t0=$(date +%s)
    (cd "$RES/work" && exec "${cmd[@]}") >"$stem.out" 2>"$stem.err" </dev/null
    rc=$?
    t1=$(date +%s)
    # 124: timeout sent SIGTERM; 137: SIGKILL, from timeout -k only if the
    # limit was reached (else e.g. the OOM killer: a failure)
    if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ $((t1 - t0)) -ge "$tl" ]; }; then
        res=hang
    elif [ $rc -eq 0 ] && grep -qE '^[[:space:]]*No Errors[[:space:]]*$' "$stem.out"; then
        res=pass
    else
        res=fail
    fi
    kill_leftovers "$B/bin/$name"
    echo "$rc $((t1 - t0))" >"$stem.rc"
    echo "$res" >"$stem.res"
}

if [ -n "$MODES" ]; then
    echo "== running $NT testlist lines, modes: $MODES (OFF: $OFF_DESC)"
fi
if mode_wanted ON; then
    [ -f "$COMP/mca_coll_cohort.so" ] || die "$COMP/mca_coll_cohort.so does not exist"
    # (ompi_info takes the component path from the environment, not from --mca)
    if ! OMPI_MCA_mca_base_component_path=$COMP_PATH OMPI_MCA_mca_base_component_show_load_errors=1 \
        "$OMPI_INFO" >"$RES/ompi_info-ON.txt" 2>&1 || ! grep -q 'MCA coll: cohort' "$RES/ompi_info-ON.txt"; then
        grep -i -m5 'cohort\|error\|warn' "$RES/ompi_info-ON.txt" >&2
        die "Open MPI does not load $COMP/mca_coll_cohort.so (ompi_info lists no 'MCA coll: cohort')"
    fi
fi
START=$(date +%s)
for ((i = 0; i < NT; i++)); do
    line="${T_NAME[$i]} ${T_NP0[$i]}${T_ARGS[$i]:+ ${T_ARGS[$i]}}"
    out=""
    for mode in OFF ON; do
        mode_wanted "$mode" || continue
        run_one "$mode" "$i"
        r=$(cat "$RES/runs/$mode/$(run_id "$i").res")
        s=$(cut -d' ' -f2 "$RES/runs/$mode/$(run_id "$i").rc" 2>/dev/null)
        out="$out $mode=$r${s:+(${s}s)}"
    done
    [ -n "$out" ] && printf '[%d/%d] %s:%s\n' $((i + 1)) "$NT" "$line" "$out"
done
ELAPSED=$(($(date +%s) - START))

# --------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------
result_of() { # mode index
    local f
    f=$RES/runs/$1/$(run_id "$2").res
    if [ "${BUILT[${T_NAME[$2]}]}" != 1 ]; then
        echo "not-built"
    elif [ -f "$f" ]; then
        cat "$f"
    else
        echo "not-run"
    fi
}

SUM=$RES/summary.txt
TSV=$RES/results.tsv
declare -A CNT=()
REGS=() FIXED=()
{
    echo "MPICH coll tests through Open MPI: without (OFF) and with (ON) the Cohort coll component"
    echo "tests:   $SRC/coll/testlist.in ($NT lines run; $SKIPPED_ENV lines with env= skipped; np capped at $MAX_NP)"
    echo "OFF:     $OFF_DESC"
    echo "ON:      --mca mca_base_component_path $COMP_PATH --mca coll_cohort_host 1${MPICH_ON_MCA:+ $MPICH_ON_MCA}"
    echo "env:     OMPI_MCA_mpi_yield_when_idle=1, LD_LIBRARY_PATH starts with $COMP_LIBDIR"
    echo "modes run this time: ${MODES:-none} (${ELAPSED}s); other modes' results are from earlier runs in $RES/runs"
    echo "np shown as N(M) when the testlist asks for M > $MAX_NP processes"
    echo
} >"$SUM"
printf 'index\tname\tnp\tlisted_np\targs\tOFF\tON\tstem\n' >"$TSV"
for ((i = 0; i < NT; i++)); do
    np=${T_NP[$i]}
    [ "${T_NP0[$i]}" != "$np" ] && np="$np(${T_NP0[$i]})"
    off=$(result_of OFF "$i")
    on=$(result_of ON "$i")
    CNT[OFF,$off]=$((${CNT[OFF,$off]:-0} + 1))
    CNT[ON,$on]=$((${CNT[ON,$on]:-0} + 1))
    echo "${T_NAME[$i]} $np${T_ARGS[$i]:+ ${T_ARGS[$i]}} : OFF=$off ON=$on" >>"$SUM"
    printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "${T_NAME[$i]}" "${T_NP[$i]}" "${T_NP0[$i]}" \
        "${T_ARGS[$i]}" "$off" "$on" "$(run_id "$i")" >>"$TSV"
    if [ "$off" = pass ] && { [ "$on" = fail ] || [ "$on" = hang ]; }; then
        REGS+=("$i")
    fi
    if [ "$on" = pass ] && { [ "$off" = fail ] || [ "$off" = hang ]; }; then
        FIXED+=("$i")
    fi
done
{
    echo
    for mode in OFF ON; do
        line="$mode: ${CNT[$mode,pass]:-0} pass, ${CNT[$mode,fail]:-0} fail, ${CNT[$mode,hang]:-0} hang"
        line="$line, ${CNT[$mode,not-built]:-0} not-built"
        [ -n "${CNT[$mode,not-run]:-}" ] && line="$line, ${CNT[$mode,not-run]} not-run"
        echo "$line"
    done
    if [ -n "$UTIL_ERR$DTP_ERR" ]; then
        echo
        echo "support library build errors: ${UTIL_ERR:-}${DTP_ERR:+ $DTP_ERR}"
    fi
    nb=$(for n in "${!BUILT[@]}"; do [ "${BUILT[$n]}" = 1 ] || echo "$n"; done | sort)
    if [ -n "$nb" ]; then
        echo
        echo "not built (first compiler error):"
        for n in $nb; do
            echo "  $n: $(cat "$B/log/$n.err")"
        done
    fi
    echo
    echo "regressions (pass OFF, fail or hang ON):"
    for i in "${REGS[@]}"; do
        np=${T_NP[$i]}
        [ "${T_NP0[$i]}" != "$np" ] && np="$np(${T_NP0[$i]})"
        stem=$RES/runs/ON/$(run_id "$i")
        echo "  ${T_NAME[$i]} $np${T_ARGS[$i]:+ ${T_ARGS[$i]}} : ON=$(result_of ON "$i") exit=$(cut -d' ' -f1 "$stem.rc") ($stem.{out,err,cmd})"
        if [ -s "$stem.err" ]; then
            grep -v -m3 -E '^(-+|[[:space:]]*)$' "$stem.err" | sed 's/^/      stderr| /'
        else
            grep -v -m3 -E '^[[:space:]]*No Errors' "$stem.out" | sed 's/^/      stdout| /'
        fi
    done
    [ ${#REGS[@]} -eq 0 ] && echo "  none"
    echo
    echo "passing only with the component (fail or hang OFF, pass ON):"
    for i in "${FIXED[@]}"; do
        np=${T_NP[$i]}
        [ "${T_NP0[$i]}" != "$np" ] && np="$np(${T_NP0[$i]})"
        echo "  ${T_NAME[$i]} $np${T_ARGS[$i]:+ ${T_ARGS[$i]}} : OFF=$(result_of OFF "$i")"
    done
    [ ${#FIXED[@]} -eq 0 ] && echo "  none"
    echo
    echo "regressions: ${#REGS[@]}"
} >>"$SUM"

echo
cat "$SUM"
[ ${#REGS[@]} -eq 0 ]
