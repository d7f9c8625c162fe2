#!/bin/bash
# The wire between hosts, measured as issue 29 asks, on one machine with fake hosts
# (COHORT_HOST_ID per rank) over UCX_TLS=tcp,self:
#   contrib/wire-check.sh BUILD RESULTS
# 1. the wire itself: ucx_perftest tag_lat (8 B) and tag_bw (16 MB, 64 MB), one way;
# 2. Cohort's host-buffer allreduce at 2 hosts x 1 rank, 8 B to 64 MB, and its ratios: busbw at
#    16 and 64 MB over the wire's tag bandwidth, 8 B time minus the wire's latency;
# 3. every host collective checked (--check) at 2 x 2 and 4 x 2, and allreduce at 64 MB there;
# 4. with WIRE_CHECK_TORCH (a Python with PyTorch), NCCL's allreduce over its socket transport
#    between the same fake hosts (contrib/nccl-wire-anchor.py), and Cohort's ratios to it;
# 5. Cohort's collectives on device buffers between the fake hosts (through host memory): every
#    one checked, allreduce's ratios to the wire, NCCL and the host path (WIRE_CHECK_DEVICE=0
#    skips it, on a machine without a GPU).
# BUILD holds tools/cohort_perf (a build folder or contrib/gpu-pack.sh's carry); on the GPU
# machine source .devrt/env.sh first.  RESULTS gets one log per step and summary.txt.  Exit 0
# when every step ran, 1 otherwise.
set -u
build=${1:?usage: contrib/wire-check.sh BUILD RESULTS}
results=${2:?usage: contrib/wire-check.sh BUILD RESULTS}
mkdir -p "$results"
source "$(dirname "$0")/gpu-common.sh"  # binary, quiet, perftest, fake_hosts
perf=$(binary tools/cohort_perf)
export UCX_TLS=tcp,self OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1  # 8 ranks on fewer cores (times then mean little)
summary=$results/summary.txt
: >"$summary"
failed=0
note() { echo "$*" | tee -a "$summary"; }

note "# 1. the wire (ucx_perftest, UCX_TLS=$UCX_TLS, one way)"
lat=$(perftest tag_lat 8 20000 | awk '{print $4}')
bw16=$(perftest tag_bw 16777216 40 | awk '{print $7}')
bw64=$(perftest tag_bw 67108864 20 | awk '{print $7}')
note "tag_lat 8 B: ${lat:-?} us; tag_bw 16 MB: ${bw16:-?} MB/s; 64 MB: ${bw64:-?} MB/s"
[ -n "$lat" ] && [ -n "$bw16" ] && [ -n "$bw64" ] || failed=1

# The out-of-place time (us) and busbw (GB/s) of the first row of BYTES in LOG.
row() { awk -v b="$2" '$1 == b && $2 ~ /^[0-9]+$/ {print $6, $8; exit}' "$1"; }

note "# 2. Cohort's allreduce on host buffers, 2 hosts x 1 rank"
if fake_hosts 2 1 "$results/allreduce-2x1.log" -c allreduce -b 8 -e 64M -f 2 -n 20 -w 5 --check; then
  read -r t8 _ <<<"$(row "$results/allreduce-2x1.log" 8)"
  read -r _ bus16 <<<"$(row "$results/allreduce-2x1.log" 16777216)"
  read -r _ bus64 <<<"$(row "$results/allreduce-2x1.log" 67108864)"
  note "8 B: $t8 us (wire latency $lat us: +$(awk -v a="$t8" -v b="$lat" 'BEGIN{printf "%.2f", a-b}') us)"
  note "16 MB: busbw $bus16 GB/s = $(awk -v a="$bus16" -v b="$bw16" 'BEGIN{printf "%.0f", 100000*a/b}')% of the wire's"
  note "64 MB: busbw $bus64 GB/s = $(awk -v a="$bus64" -v b="$bw64" 'BEGIN{printf "%.0f", 100000*a/b}')% of the wire's"
else
  note "failed: see allreduce-2x1.log"
  failed=1
fi

note "# 3. every host collective checked, and allreduce 64 MB, at 2 x 2 and 4 x 2"
for shape in "4 2" "8 2"; do
  set -- $shape
  name=$(($1 / $2))x$2
  if fake_hosts "$1" "$2" "$results/all-$name.log" -c all -b 8 -e 1M -f 32 -n 5 -w 1 --check &&
    fake_hosts "$1" "$2" "$results/allreduce-$name.log" -c allreduce -b 64M -e 64M -n 10 -w 2; then
    read -r _ bus <<<"$(row "$results/allreduce-$name.log" 67108864)"
    note "$name: every collective checked: $(grep -o 'Wrong elements *: [0-9]* [A-Z]*' "$results/all-$name.log"); allreduce 64 MB busbw $bus GB/s = $(awk -v a="$bus" -v b="$bw64" 'BEGIN{printf "%.0f", 100000*a/b}')% of the wire's"
  else
    note "$name: failed (see all-$name.log, allreduce-$name.log)"
    failed=1
  fi
done

# 4. The anchor: NCCL's allreduce over its socket transport between the same fake hosts, on
# device buffers (WIRE_CHECK_TORCH: a Python with PyTorch, which loads NCCL; several ranks on
# one GPU need MPS, started by the caller).  Skipped, and said, without it.
if [ -n "${WIRE_CHECK_TORCH:-}" ]; then
  note "# 4. NCCL (PyTorch's) allreduce, 2 hosts x 1 rank, socket transport on lo, device buffers"
  # --bind-to none: bound to the rank's one core, NCCL's proxy and socket threads take turns
  # with the main thread (8 B took 8.5 ms instead of 24 us on an H100).
  if timeout 180 mpirun -np 2 --bind-to none "$WIRE_CHECK_TORCH" \
    "$(dirname "$0")/nccl-wire-anchor.py" 1 8 16777216 67108864 >"$results/nccl-2x1.log" 2>&1; then
    read -r _ n8 _ <<<"$(awk '$1 == 8' "$results/nccl-2x1.log")"
    read -r _ _ nbus16 _ <<<"$(awk '$1 == 16777216' "$results/nccl-2x1.log")"
    read -r _ _ nbus64 _ <<<"$(awk '$1 == 67108864' "$results/nccl-2x1.log")"
    note "NCCL 8 B: $n8 us (Cohort's time / NCCL's $(awk -v a="${t8:-0}" -v b="$n8" 'BEGIN{printf "%.2f", a/b}'))"
    note "NCCL 16 MB: busbw $nbus16 GB/s (Cohort's busbw / NCCL's $(awk -v a="${bus16:-0}" -v b="$nbus16" 'BEGIN{printf "%.2f", a/b}'))"
    note "NCCL 64 MB: busbw $nbus64 GB/s (Cohort's busbw / NCCL's $(awk -v a="${bus64:-0}" -v b="$nbus64" 'BEGIN{printf "%.2f", a/b}'))"
  else
    note "NCCL anchor failed: see nccl-2x1.log"
    failed=1
  fi
else
  note "# 4. NCCL anchor skipped: set WIRE_CHECK_TORCH to a Python with PyTorch"
fi
# 5. Device buffers across the fake hosts: collectives of a team that spans hosts run through
# host memory in pieces (team/coll_staged.cc), here with buffers not registered (MPI's and
# PyTorch's case); ratios to the wire, to NCCL (step 4) and to the host path (steps 2, 3).
# Needs a GPU (several ranks on it: MPS, started by the caller); WIRE_CHECK_DEVICE=0 skips it.
if [ "${WIRE_CHECK_DEVICE:-1}" != 0 ]; then
  export COHORT_ALLOW_SHARED_GPU=1
  note "# 5. Cohort's allreduce on device buffers (through host memory, not registered), 2 hosts x 1 rank"
  dev=(-m cuda --no-register)
  if fake_hosts 2 1 "$results/device-2x1.log" "${dev[@]}" -c allreduce -b 8 -e 64M -f 2 -n 20 -w 5 --check; then
    read -r d8 _ <<<"$(row "$results/device-2x1.log" 8)"
    read -r _ dbus16 <<<"$(row "$results/device-2x1.log" 16777216)"
    read -r _ dbus64 <<<"$(row "$results/device-2x1.log" 67108864)"
    note "device 8 B: $d8 us (wire latency $lat us: +$(awk -v a="$d8" -v b="$lat" 'BEGIN{printf "%.2f", a-b}') us; NCCL's ${n8:-?} us: ratio $(awk -v a="$d8" -v b="${n8:-0}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "?"}'))"
    note "device 16 MB: busbw $dbus16 GB/s = $(awk -v a="$dbus16" -v b="$bw16" 'BEGIN{printf "%.0f", 100000*a/b}')% of the wire's; / NCCL's $(awk -v a="$dbus16" -v b="${nbus16:-0}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "?"}'); / host path's $(awk -v a="$dbus16" -v b="${bus16:-0}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "?"}')"
    note "device 64 MB: busbw $dbus64 GB/s = $(awk -v a="$dbus64" -v b="$bw64" 'BEGIN{printf "%.0f", 100000*a/b}')% of the wire's; / NCCL's $(awk -v a="$dbus64" -v b="${nbus64:-0}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "?"}'); / host path's $(awk -v a="$dbus64" -v b="${bus64:-0}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "?"}')"
  else
    note "failed: see device-2x1.log"
    failed=1
  fi
  for shape in "4 2" "8 2"; do
    set -- $shape
    name=$(($1 / $2))x$2
    if fake_hosts "$1" "$2" "$results/device-all-$name.log" "${dev[@]}" -c all -b 8 -e 1M -f 32 -n 5 -w 1 --check &&
      fake_hosts "$1" "$2" "$results/device-allreduce-$name.log" "${dev[@]}" -c allreduce -b 64M -e 64M -n 10 -w 2; then
      read -r _ dbus <<<"$(row "$results/device-allreduce-$name.log" 67108864)"
      read -r _ hbus <<<"$(row "$results/allreduce-$name.log" 67108864)"
      note "$name device: every collective checked: $(grep -o 'Wrong elements *: [0-9]* [A-Z]*' "$results/device-all-$name.log"); allreduce 64 MB busbw $dbus GB/s = $(awk -v a="$dbus" -v b="${hbus:-0}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "?"}') x the host path's"
    else
      note "$name device: failed (see device-all-$name.log, device-allreduce-$name.log)"
      failed=1
    fi
  done
fi
exit $failed
