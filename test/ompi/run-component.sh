#!/bin/sh
# TAP test of the Open MPI coll component: installed into a staging folder, loaded through
# mca_base_component_path, it must export only its component structure, run unmodified C and
# Fortran MPI programs at np 2, 3, 4 with the same results as Open MPI's own modules (the C one
# also compares every buffer, whole, with the same call on Open MPI's modules in its run), show
# up in coll_base_verbose, fall back for what it does not take, obey its MCA parameters, and
# speak through Open MPI's output ("[host:pid] coll:cohort: ..."), and, on a fake CUDA driver
# (fake_cuda.c) whose device memory the CPU cannot touch, never hand device memory to Open MPI.
# Environment (from Makefile.am): TOP_BUILDDIR, SRCDIR, MPIRUN, CC, MPIFORT, MPI_CFLAGS,
# MPI_LIBS, SANITIZER_FLAGS, HAVE_COMPONENT.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
log=$stage/log
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
# A failure shows the test programs' own failure lines first, then the end of the log.
not_ok() {
  n=$((n + 1))
  echo "not ok $n - $1"
  { grep -m 20 -E '^FAIL |WRONG$' "$log"; tail -40 "$log"; } | sed 's/^/# /'
}
result() { if [ "$1" -eq 0 ]; then ok "$2"; else not_ok "$2"; fi; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

[ "$HAVE_COMPONENT" = yes ] || skip_all "the component is not built (Open MPI 4.1 development headers missing)"
# An ASan component would need libasan preloaded into every MPI process and mpirun itself.
[ -z "$SANITIZER_FLAGS" ] || skip_all "sanitizer build: the component runs in the plain build's check"

echo "1..35"
make -C "$TOP_BUILDDIR" install DESTDIR="$stage/root" >"$log" 2>&1
prefix=$(sed -n 's/^prefix=//p' "$TOP_BUILDDIR/cohort.pc")
libdir=$(find "$stage/root$prefix" -name 'libcohort.so.0' -printf '%h\n' | head -1)
component_dir=$libdir/cohort/openmpi
{ test -f "$component_dir/mca_coll_cohort.so" && ! test -e "$component_dir/mca_coll_cohort.la"; } >>"$log" 2>&1
result $? "make install puts mca_coll_cohort.so (and no .la) in \$libdir/cohort/openmpi"

# Open MPI looks up mca_coll_cohort_component; nothing else of ours may be visible to it.
nm -D --defined-only "$component_dir/mca_coll_cohort.so" >"$log" 2>&1 &&
  [ "$(awk '{print $3}' "$log")" = mca_coll_cohort_component ]
result $? "mca_coll_cohort.so exports mca_coll_cohort_component and nothing else (nm -D)"
# What it needs of Cohort is the C API: libcohort.so exports nothing else.
nm -D --undefined-only "$component_dir/mca_coll_cohort.so" >"$log" 2>&1 &&
  grep -q ' cohort_allreduce$' "$log" && ! grep -i cohort "$log" | grep -qv ' U cohort_'
result $? "mca_coll_cohort.so uses Cohort's C API only (every Cohort symbol it needs is cohort_*)"

# The default component folder stays on the path after ours, as the README shows.
default_dir=$(ompi_info --parsable --param mca base --level 9 2>/dev/null |
  sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"*\([^"]*\)"*$/\1/p' | head -1)
path="$component_dir:${default_dir:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# (ompi_info takes the path from the environment only, not from --mca.)
OMPI_MCA_mca_base_component_path="$path" ompi_info --param coll cohort --level 9 >"$log" 2>&1 &&
  grep -q 'coll_cohort_priority.*current value: "40"' "$log" && grep -q 'coll_cohort_host' "$log" &&
  grep -q 'coll_cohort_collectives' "$log" && grep -q 'coll_cohort_init_timeout.*current value: "300' "$log"
result $? "ompi_info lists the component's parameters (priority 40, init_timeout 300 by default)"

# shellcheck disable=SC2086
$CC -std=c99 -Wall -Wextra -Werror -O1 -o "$stage/ctest" "$SRCDIR/coll_component_test.c" "$SRCDIR/coll_component_device.c" $MPI_CFLAGS $MPI_LIBS >"$log" 2>&1
result $? "the C test program builds against mpi.h alone"

run_timeout=300  # seconds an mpirun may take
# mpirun_to OUTPUT [mpirun arguments...]: each rank's stdout and stderr go to files of their
# own (lines of different ranks cannot interleave), joined rank by rank into OUTPUT; mpirun's
# own words are added when it fails.
mpirun_to() {
  out=$1
  shift
  rm -rf "$out.d"
  timeout "$run_timeout" "$MPIRUN" -x LD_LIBRARY_PATH --output-filename "$out.d" "$@" >"$out.term" 2>&1 </dev/null
  status=$?
  cat "$out.d"/1/rank.*/stdout "$out.d"/1/rank.*/stderr >"$out" 2>/dev/null
  [ $status -eq 0 ] || cat "$out.term" >>"$out"
  return $status
}
# run OUTPUT NP [mpirun options...] PROGRAM [args...], with our component on the path.
run() {
  out=$1 np=$2
  shift 2
  mpirun_to "$out" -np "$np" --mca mca_base_component_path "$path" "$@"
}
digests() { grep -E '^[0-9]+ [a-z]' "$1" | sort; }
# What rank 0 printed (mpirun_to's OUTPUT.d holds each rank's files).
rank0() { cat "$1.d"/1/rank.0/stdout "$1.d"/1/rank.0/stderr 2>/dev/null; }
# Rank 0's end-of-communicator summary for MPI_COMM_WORLD (coll_cohort_verbose 1), written by
# Open MPI's output: "[host:pid] coll:cohort: MPI_COMM_WORLD: ...".
summary() { rank0 "$1" | grep '^\[[^]]*:[0-9]*\] coll:cohort: MPI_COMM_WORLD:'; }

# The number of cases a run says it ran ("summary: 0 wrong on 3 ranks, 4321 cases").
cases() { sed -n 's/^summary: .* ranks, \([0-9][0-9]*\) cases$/\1/p' "$1"; }
same_digests() {  # a b: the same cases with the same results, as many as b says it ran
  digests "$1" >"$stage/a" && digests "$2" >"$stage/b" && diff "$stage/a" "$stage/b" >"$log" 2>&1 &&
    [ -n "$(cases "$2")" ] && [ "$(wc -l <"$stage/a")" -eq "$(cases "$2")" ] && return 0
  echo "digest lines: $(wc -l <"$stage/a") and $(wc -l <"$stage/b"), cases run: $(cases "$2")" >>"$log"
  return 1
}
# The summary's entry for a collective: "; MPI_Gather 12 on Cohort, 3 fell back (...)".
entry() { echo "$s" | tr ';' '\n' | grep -E "(^|[: ])$1 [0-9]+ on Cohort"; }
on_cohort() {  # collectives...: each ran on Cohort at least once; names every one that did not
  missing=""
  for c in "$@"; do
    entry "$c" | grep -Eq " $c [1-9][0-9]* on Cohort" || missing="$missing $c"
  done
  [ -z "$missing" ] || { echo "not on Cohort:$missing" >>"$log"; return 1; }
}
packed_on_cohort() {  # collectives...: each ran on Cohort, packed from a type with gaps at least once
  missing=""
  for c in "$@"; do
    entry "$c" | grep -Eq " $c [1-9][0-9]* on Cohort \([1-9][0-9]* packed from a datatype with gaps\)" ||
      missing="$missing $c"
  done
  [ -z "$missing" ] || { echo "not packed on Cohort:$missing" >>"$log"; return 1; }
}
not_on_cohort() {  # collectives...: none ran on Cohort
  found=""
  for c in "$@"; do
    ! entry "$c" | grep -Eq " $c [1-9][0-9]* on Cohort" || found="$found $c"
  done
  [ -z "$found" ] || { echo "on Cohort:$found" >>"$log"; return 1; }
}
all_fell_back() {  # reason collectives...: none ran on Cohort, each fell back for the reason
  reason=$1 missing=""
  shift
  for c in "$@"; do
    entry "$c" | grep -Eq " $c 0 on Cohort, [1-9][0-9]* fell back \($reason" || missing="$missing $c"
  done
  [ -z "$missing" ] || { echo "did not fall back ($reason):$missing" >>"$log"; return 1; }
}
# Every MPI-3.1 collective on intra-communicators the component serves, by Open MPI's names.
blocking="MPI_Allreduce MPI_Bcast MPI_Reduce MPI_Allgather MPI_Reduce_scatter_block MPI_Alltoall
  MPI_Barrier MPI_Gather MPI_Gatherv MPI_Scatter MPI_Scatterv MPI_Allgatherv MPI_Alltoallv
  MPI_Reduce_scatter MPI_Scan MPI_Exscan"
nonblocking="MPI_Iallreduce MPI_Ibcast MPI_Ireduce MPI_Iallgather MPI_Iallgatherv MPI_Ialltoall
  MPI_Ialltoallv MPI_Igather MPI_Igatherv MPI_Iscatter MPI_Iscatterv MPI_Ireduce_scatter_block
  MPI_Ireduce_scatter MPI_Iscan MPI_Iexscan MPI_Ibarrier"
colls="$blocking $nonblocking"
# The collectives that move data (a type with gaps travels packed), blocking and nonblocking.
moved_colls="MPI_Bcast MPI_Allgather MPI_Allgatherv MPI_Alltoall MPI_Alltoallv MPI_Gather MPI_Gatherv
  MPI_Scatter MPI_Scatterv MPI_Ibcast MPI_Iallgather MPI_Iallgatherv MPI_Ialltoall MPI_Ialltoallv
  MPI_Igather MPI_Igatherv MPI_Iscatter MPI_Iscatterv"
ncolls=$(echo "$colls" | wc -w)
# What the Fortran program calls.
fortran_colls="MPI_Allreduce MPI_Bcast MPI_Reduce MPI_Allgather MPI_Reduce_scatter_block MPI_Alltoall
  MPI_Barrier MPI_Gather MPI_Scatter MPI_Allgatherv MPI_Scan MPI_Iallreduce"
nfortran_colls=$(echo "$fortran_colls" | wc -w)

for np in 2 3 4; do
  run "$stage/on$np" "$np" --mca coll_cohort_host 1 --mca coll_cohort_verbose 1 --mca coll_base_verbose 10 "$stage/ctest"
  status=$?
  cp "$stage/on$np" "$log"
  s=$(summary "$stage/on$np")
  # shellcheck disable=SC2086
  # (Its reference communicator, test-ompi, must not reach Cohort: no summary of its own.)
  [ $status -eq 0 ] && on_cohort $colls && grep -q "summary: 0 wrong on $np ranks" "$stage/on$np" &&
    grep -q 'coll:base:comm_select: component available: cohort, priority: 40' "$stage/on$np" &&
    ! grep -q 'coll:cohort: test-ompi' "$stage/on$np"
  result $? "np=$np C: all $ncolls collectives (blocking and nonblocking) run on Cohort (coll_base_verbose shows it selected), every result right, every buffer byte for byte as Open MPI's modules leave it"
  echo "$s" >"$log"
  echo "$s" | grep -q 'MPI_Allreduce .* fell back (op Cohort does not have)' &&
    echo "$s" | grep -q 'MPI_Allreduce .* fell back (datatype Cohort does not reduce)' &&
    ! echo "$s" | grep -q 'fell back (refused'
  result $? "np=$np C: MPI_MAXLOC, a user op and MPI_SHORT fall back (and are right); no call falls back for Cohort's argument check"
  run "$stage/off$np" "$np" --mca coll_cohort_enable 0 "$stage/ctest"
  status=$?
  [ $status -eq 0 ] && ! grep -q 'coll:cohort' "$stage/off$np" && same_digests "$stage/on$np" "$stage/off$np"
  result $? "np=$np C: results identical to Open MPI's own modules (coll_cohort_enable 0), $(digests "$stage/on$np" | wc -l) cases"
  s=$(summary "$stage/on$np")
  # The two ways a rank left the others' route (MPICH's coll suite found them): reading an
  # argument MPI ignores (MPI_DATATYPE_NULL there made Open MPI abort the job), and a type with
  # gaps on some ranks only (they fell back alone and the others waited for them).
  ignored=$(digests "$stage/on$np" | grep -c -- '-ignored')
  layouts=$(digests "$stage/on$np" | grep -c -- '-layouts')
  # shellcheck disable=SC2086
  [ "$ignored" -gt 0 ] && [ "$layouts" -gt 0 ] && [ "$ignored" -eq "$(digests "$stage/off$np" | grep -c -- '-ignored')" ] &&
    [ "$layouts" -eq "$(digests "$stage/off$np" | grep -c -- '-layouts')" ] &&
    packed_on_cohort $moved_colls
  result $? "np=$np C: junk where MPI ignores arguments ($ignored cases: MPI_DATATYPE_NULL, -1, NULL, in place and off the root) and layouts that differ between ranks ($layouts cases: a type with gaps on some ranks, negative displacements) run on Cohort, packed where a type has gaps, with Open MPI's results"
done

if [ -z "$MPIFORT" ]; then
  for np in 0 2 3 4; do n=$((n + 1)); echo "ok $n # SKIP no Fortran MPI compiler (mpifort)"; done
else
  "$MPIFORT" -Wall -Wextra -Werror -o "$stage/ftest" "$SRCDIR/coll_component_test.f90" \
    "$SRCDIR/coll_component_device.c" >"$log" 2>&1
  result $? "the Fortran test program builds (use mpi, and its C device-memory helper) with -Wall -Wextra -Werror"
  for np in 2 3 4; do
    run "$stage/fon$np" "$np" --mca coll_cohort_host 1 --mca coll_cohort_verbose 1 "$stage/ftest"
    status=$?
    run "$stage/foff$np" "$np" --mca coll_cohort_enable 0 "$stage/ftest"
    status_off=$?
    cp "$stage/fon$np" "$log"
    s=$(summary "$stage/fon$np")
    # shellcheck disable=SC2086
    [ $status -eq 0 ] && [ $status_off -eq 0 ] && on_cohort $fortran_colls &&
      grep -q "summary: 0 wrong on $np ranks" "$stage/fon$np" && same_digests "$stage/fon$np" "$stage/foff$np"
    result $? "np=$np Fortran: all $nfortran_colls collectives it calls run on Cohort, results identical to Open MPI's modules"
  done
fi

# Default settings, given the environment way: host buffers stay with Open MPI, no team is made.
OMPI_MCA_mca_base_component_path="$path" OMPI_MCA_coll_cohort_verbose=1 \
  mpirun_to "$stage/host_off" -np 2 "$stage/ctest"
status=$?
cp "$stage/host_off" "$log"
s=$(summary "$stage/host_off")
# shellcheck disable=SC2086
[ $status -eq 0 ] && all_fell_back "host buffer" $colls &&
  ! echo "$s" | grep -Eq '[1-9][0-9]* on Cohort' && ! grep -q 'team for' "$stage/host_off" &&
  same_digests "$stage/host_off" "$stage/off2"
result $? "host switch off (OMPI_MCA_* form): every host-buffer call of all $ncolls collectives falls back, no team is created, same results"

# Only the collectives listed are taken; an unknown name (alltoallw: MPI has it, Cohort never
# serves it) is named in a warning.
run "$stage/some" 3 --mca coll_cohort_host 1 --mca coll_cohort_verbose 1 \
  --mca coll_cohort_collectives "allreduce,barrier,alltoallw" "$stage/ctest"
status=$?
cp "$stage/some" "$log"
s=$(summary "$stage/some")
others=$(echo "$blocking" | tr ' ' '\n' | grep -Ev '^$|^MPI_(Allreduce|Barrier)$')
# shellcheck disable=SC2086
[ $status -eq 0 ] && on_cohort MPI_Allreduce MPI_Barrier && ! echo "$s" | grep -q 'MPI_Bcast' &&
  not_on_cohort $others &&
  grep -q "coll_cohort_collectives names 'alltoallw'" "$stage/some" && same_digests "$stage/some" "$stage/off3"
result $? "coll_cohort_collectives=allreduce,barrier: no other blocking collective reaches Cohort; 'alltoallw' is warned about"

# A team that cannot be made (a bad COHORT_COLL_ALGO fails creation on every rank alike): the
# reason is warned about once and every collective stays with Open MPI, still right.
run "$stage/noteam" 3 --mca coll_cohort_host 1 --mca coll_cohort_verbose 1 \
  -x COHORT_COLL_ALGO="allreduce=no-such-algorithm" "$stage/ctest"
status=$?
cp "$stage/noteam" "$log"
s=$(summary "$stage/noteam")
[ $status -eq 0 ] && rank0 "$stage/noteam" | grep -q 'coll:cohort: no Cohort team on MPI_COMM_WORLD: .*no-such-algorithm' &&
  echo "$s" | grep -q 'MPI_Allreduce 0 on Cohort, .*fell back (no Cohort team' &&
  same_digests "$stage/noteam" "$stage/off3"
result $? "a team creation that fails (bad COHORT_COLL_ALGO) is named once; everything falls back, same results"

# The per-communicator opt-out (info key coll_cohort_enable=false) and the side-by-side bench.
# shellcheck disable=SC2086
$CC -std=c99 -O2 -o "$stage/bench" "$SRCDIR/coll_component_bench.c" $MPI_CFLAGS $MPI_LIBS >"$log" 2>&1 &&
  run "$stage/bench.out" 2 --mca coll_cohort_host 1 --mca coll_cohort_verbose 1 "$stage/bench" -b 8 -e 1024 -n 20
status=$?
cat "$stage/bench.out" >>"$log"
[ $status -eq 0 ] && rank0 "$stage/bench.out" | grep -Eq 'coll:cohort: bench-cohort: MPI_Allreduce [1-9][0-9]* on Cohort' &&
  ! grep -q 'bench-ompi' "$stage/bench.out" && grep -Eq '^ +1024 ' "$stage/bench.out"
result $? "a communicator made with info coll_cohort_enable=false keeps Open MPI's modules (the side-by-side bench runs)"

# A rank late to the first collective: the others say, every coll_cohort_init_timeout seconds,
# where they wait (Open MPI's own modules would wait silently), then go on when it comes.
run "$stage/late" 3 --mca coll_cohort_host 1 --mca coll_cohort_init_timeout 1 -x LATE_RANK=2:4 "$stage/ctest"
status=$?
cp "$stage/late" "$log"
[ $status -eq 0 ] && grep -q 'summary: 0 wrong on 3 ranks' "$stage/late" &&
  rank0 "$stage/late" | grep -q 'coll:cohort: MPI_Allreduce on MPI_COMM_WORLD (3 ranks) has waited [1-9] s for every rank to'
result $? "a rank 4 s late to the first collective: the others name the communicator and the wait each second, then finish right"

# Device buffers on a machine without a GPU: a fake CUDA driver (fake_cuda.c), first on
# LD_LIBRARY_PATH as libcuda.so.1, whose device memory faults on any CPU access, as real device
# memory does under Debian's Open MPI (not CUDA-aware).  The C test puts MPI_COMM_WORLD's
# buffers there (COLL_TEST_MEMORY); every call must run on Cohort or be staged through host
# memory, with the results of the host-buffer run on Open MPI's modules.  A device call that
# reaches Open MPI unstaged says so in its verbose line (Cohort's refusal names device memory).
fake=$stage/fake-cuda
mkdir -p "$fake"
# shellcheck disable=SC2086
$CC -std=c99 -Wall -Wextra -Werror -O1 -shared -fPIC -o "$fake/libcuda.so.1" "$SRCDIR/fake_cuda.c" >"$log" 2>&1
have_fake=$?
# A rank that takes another route than the others hangs the run: a shorter limit keeps the
# check within minutes, and after one hang the other device runs are not started.
device_timeout=150
hung=""
# device_run OUTPUT NP MEMORY PROGRAM [mpirun options...]: the C or Fortran test with
# COLL_TEST_MEMORY=MEMORY.
device_run() {
  d_out=$1 d_np=$2 d_memory=$3 d_program=$4
  shift 4
  if [ -n "$hung" ]; then
    echo "not run: $hung" >"$d_out"
    return 1
  fi
  saved_path=$LD_LIBRARY_PATH
  LD_LIBRARY_PATH="$fake:$saved_path" run_timeout=$device_timeout
  run "$d_out" "$d_np" -x COLL_TEST_MEMORY="$d_memory" --mca coll_cohort_verbose 3 "$@" "$d_program"
  d_status=$?
  LD_LIBRARY_PATH=$saved_path run_timeout=300
  if [ $d_status -eq 124 ]; then
    hung="the run at np=$d_np with COLL_TEST_MEMORY=$d_memory hung (no end in $device_timeout s)"
    echo "$hung; the last lines of each rank:" >>"$d_out"
    for f in "$d_out.d"/1/rank.*/stdout "$d_out.d"/1/rank.*/stderr; do tail -n 3 "$f"; done >>"$d_out"
  fi
  return $d_status
}
# No segfault, every case right and as on Open MPI's modules with host buffers (REFERENCE).
device_right() {  # OUTPUT STATUS NP REFERENCE
  [ "$2" -eq 0 ] && ! grep -q 'Segmentation fault' "$1" && grep -q "summary: 0 wrong on $3 ranks" "$1" &&
    same_digests "$1" "$4"
}
# Device memory handed to Open MPI's module unstaged, or still in a staged call's arguments.
device_leaks() {
  grep -E 'falls back to Open MPI: .*(device memory|cuda-device)|to run on Open MPI: .*cuda-device' "$1" |
    sed 's/^/leak: /' | head -5 >>"$log"
  grep -Eq 'falls back to Open MPI: .*(device memory|cuda-device)|to run on Open MPI: .*cuda-device' "$1"
}
# A rank whose type has gaps packed its side (on device memory: staged to the host first).
packed() { grep -q "packed [0-9]* bytes of a datatype with gaps on this rank" "$1"; }
staged_to() { grep -q "staged [0-9]* bytes of device memory through host memory to run on $1" "$2"; }
# A rank with host memory while the route remembered for the call is the GPU (the test's
# memory switch): its buffers go onto the GPU to join the others.
staged_onto_gpu() { grep -q "staged [0-9]* bytes of host memory onto the GPU to run on Cohort's GPU path" "$1"; }

if [ $have_fake -ne 0 ]; then
  for np in 2 3 mixed off; do n=$((n + 1)); echo "ok $n # SKIP the fake CUDA driver does not build: $(head -1 "$log")"; done
else
  for np in 2 3; do
    device_run "$stage/dev$np" "$np" device "$stage/ctest" --mca coll_cohort_host 1
    status=$?
    cp "$stage/dev$np" "$log"
    device_right "$stage/dev$np" $status "$np" "$stage/off$np" && ! device_leaks "$stage/dev$np" &&
      staged_to "Cohort's host path" "$stage/dev$np" && staged_to "Open MPI: op Cohort does not have" "$stage/dev$np" &&
      staged_onto_gpu "$stage/dev$np" && packed "$stage/dev$np"
    result $? "np=$np C on device memory (fake CUDA driver): no segfault, results identical to the host-buffer run on Open MPI's modules (junk in ignored arguments and layouts that differ between ranks included: device buffers with gaps staged and packed on the host), calls Cohort refuses on the GPU staged to its host path, MAXLOC staged to Open MPI, host buffers of a rank that switched kinds between agreements staged onto the GPU, no device buffer reaches Open MPI unstaged"
  done
  device_run "$stage/mixed3" 3 mixed "$stage/ctest" --mca coll_cohort_host 1
  status=$?
  cp "$stage/mixed3" "$log"
  device_right "$stage/mixed3" $status 3 "$stage/off3" && ! device_leaks "$stage/mixed3" && packed "$stage/mixed3"
  result $? "np=3 C, device memory on odd ranks, host memory on even ones: every rank takes the same route, results identical"
  device_run "$stage/devoff2" 2 device "$stage/ctest" --mca coll_cohort_host 0
  status=$?
  cp "$stage/devoff2" "$log"
  device_right "$stage/devoff2" $status 2 "$stage/off2" && ! device_leaks "$stage/devoff2" &&
    staged_to "Open MPI: host buffer" "$stage/devoff2"
  result $? "np=2 C on device memory with coll_cohort_host 0: what does not run on the GPU is staged to Open MPI, results identical"
fi

# A staging copy that fails on one rank only (the fake driver's FAKE_CUDA_FAIL_PINNED_COPY; the
# copy is Cohort's own: with no GPU path on the fake driver, device calls run through host
# memory inside Cohort): that rank's call fails and tells the others why, so their call fails
# at once instead of waiting for it until COHORT_COLL_TIMEOUT; every later call on Cohort fails on every rank
# alike (none falls back alone), and one on Open MPI's module still runs.
if [ $have_fake -ne 0 ]; then
  n=$((n + 1))
  echo "ok $n # SKIP the fake CUDA driver does not build (see the C device checks)"
else
  # shellcheck disable=SC2086
  $CC -std=c99 -Wall -Wextra -Werror -O1 -o "$stage/failtest" "$SRCDIR/coll_component_failure.c" \
    "$SRCDIR/coll_component_device.c" $MPI_CFLAGS $MPI_LIBS >"$log" 2>&1 &&
    device_run "$stage/fail3" 3 device "$stage/failtest" -x FAKE_CUDA_FAIL_PINNED_COPY=1:3 \
      --mca coll_cohort_host 1
  status=$?
  cp "$stage/fail3" "$log"
  [ $status -eq 0 ] && grep -q '^PASS: first failed call [0-9]* to [0-9]* ' "$stage/fail3" &&
    grep -q 'failed: COHORT_ERR_CUDA (.*rank 1 (host .*) failed: copying a piece of device memory into host memory' "$stage/fail3"
  result $? "np=3, a staging copy that fails on rank 1 only (fake CUDA driver; Cohort's own, its device calls running through host memory): every rank's call fails at that call, within seconds, naming rank 1 and the copy; every later call on Cohort fails on every rank; MPI_MAXLOC on Open MPI's module still runs"
fi

# The Fortran test on the fake driver's device memory (COLL_TEST_MEMORY, through
# coll_component_device.c): every call gets contiguous views of device copies, which Open MPI's
# Fortran bindings must hand on as they are (a copy-in/out through the CPU faults), with the
# results of the host-buffer run on Open MPI's modules.
if [ -z "$MPIFORT" ]; then
  for np in 2 3; do n=$((n + 1)); echo "ok $n # SKIP no Fortran MPI compiler (mpifort)"; done
elif [ $have_fake -ne 0 ]; then
  for np in 2 3; do n=$((n + 1)); echo "ok $n # SKIP the fake CUDA driver does not build (see the C device checks)"; done
else
  for np in 2 3; do
    memory=device ranks="every rank's"
    [ "$np" -eq 2 ] || memory=mixed ranks="odd ranks'"
    device_run "$stage/fdev$np" "$np" "$memory" "$stage/ftest" --mca coll_cohort_host 1
    status=$?
    cp "$stage/fdev$np" "$log"
    device_right "$stage/fdev$np" $status "$np" "$stage/foff$np" && ! device_leaks "$stage/fdev$np"
    result $? "np=$np Fortran, $ranks buffers in device memory (fake CUDA driver, COLL_TEST_MEMORY=$memory): no segfault, results identical to the host-buffer run on Open MPI's modules, no device buffer reaches Open MPI unstaged"
  done
fi

# Buffers reused, at offsets, freed and allocated again between rounds (component_cache.c; on
# the GPU the registration cache serves them: contrib/gpu-check.sh).  On the fake driver the
# calls run through host memory: the program's own checks and the component's path there.
if [ $have_fake -ne 0 ]; then
  n=$((n + 1))
  echo "ok $n # SKIP the fake CUDA driver does not build (see the C device checks)"
else
  # shellcheck disable=SC2086
  $CC -std=c99 -Wall -Wextra -Werror -O1 -o "$stage/cachetest" "$SRCDIR/component_cache.c" \
    "$SRCDIR/coll_component_device.c" $MPI_CFLAGS $MPI_LIBS -ldl >"$log" 2>&1 &&
    printf '#!/bin/sh\nexec "%s" -b 262144 -r 4 -k 2\n' "$stage/cachetest" >"$stage/cache.sh" &&
    chmod +x "$stage/cache.sh" &&
    device_run "$stage/cache3" 3 device "$stage/cache.sh" -x COHORT_REG_CACHE_ENTRIES=4 \
      --mca coll_cohort_host 1
  status=$?
  cp "$stage/cache3" "$log"
  [ $status -eq 0 ] && rank0 "$stage/cache3" | grep -q '^component_cache: 0 wrong$' &&
    [ "$(rank0 "$stage/cache3" | grep -c '^round [0-3]: ')" -eq 4 ]
  result $? "np=3, device buffers reused, at an offset, freed and allocated again between rounds (fake CUDA driver: staged): every value right"
fi

# What the component costs over Cohort's API (component_overhead.c, linked with the installed
# libcohort): it builds, times both on the same buffers and prints a row per size.  Timings on
# two oversubscribed cores mean nothing; the GPU machine's run (contrib/gpu-check.sh) is the
# measurement.
include_dir=$(find "$stage/root$prefix" -name cohort.h -printf '%h\n' | head -1)
# shellcheck disable=SC2086
$CC -std=c99 -Wall -Wextra -Werror -O2 -o "$stage/overhead" "$SRCDIR/component_overhead.c" \
  -I"$include_dir" $MPI_CFLAGS -L"$libdir" -lcohort -ldl $MPI_LIBS >"$log" 2>&1 &&
  run "$stage/overhead.out" 2 --mca coll_cohort_host 1 "$stage/overhead" -s 8,65536 -n 50
status=$?
cat "$stage/overhead.out" >>"$log"
[ $status -eq 0 ] && [ "$(rank0 "$stage/overhead.out" | grep -cE '^ +(8|65536) +[0-9.]+ +[0-9.]+ ')" -eq 2 ]
result $? "component_overhead builds against cohort.h and times MPI_Allreduce through the component against cohort_allreduce"
