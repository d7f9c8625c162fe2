#!/bin/sh
# TAP test: a real Slurm on this machine (slurmctld + slurmd on 127.0.0.1, auth/none, no
# systemd, no cgroups) runs contrib/slurm/cohort.sbatch with both launchers against a staged
# install of Cohort; the daemons are stopped by their pid files at the end.
# Environment (from Makefile.am): TOP_BUILDDIR, TOP_SRCDIR, CC, MPI_CFLAGS, MPI_LIBS,
# SANITIZER_FLAGS, HAVE_COMPONENT.
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null ||
  skip_all "Slurm is not installed (contrib/setup-debian.sh installs slurmctld, slurmd, slurm-client)"
[ -z "$SANITIZER_FLAGS" ] || skip_all "sanitizer build: Slurm runs in the plain build's check"
[ "$HAVE_COMPONENT" = yes ] || skip_all "the Open MPI component is not built"

stage=$(mktemp -d)
log=$stage/log
stop_daemons() {
  for d in slurmd slurmctld; do
    [ -f "$stage/$d.pid" ] && kill "$(cat "$stage/$d.pid")" 2>/dev/null
  done
  sleep 1
  for d in slurmd slurmctld; do
    [ -f "$stage/$d.pid" ] && kill -9 "$(cat "$stage/$d.pid")" 2>/dev/null
  done
}
trap 'stop_daemons; rm -rf "$stage"' EXIT
n=0
result() {
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; sed 's/^/# /' "$log" | tail -40; fi
}
echo "1..6"

# Two free TCP ports for the daemons.
port=$((20000 + $$ % 20000))
while ss -ltn 2>/dev/null | grep -q ":$port \|:$((port + 1)) "; do port=$((port + 2)); done
node=$(hostname -s)
mkdir -p "$stage/state" "$stage/spool"
: >"$stage/plugstack.conf"
cat >"$stage/slurm.conf" <<CONF
ClusterName=cohorttest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$stage/state
SlurmdSpoolDir=$stage/spool
SlurmctldPidFile=$stage/slurmctld.pid
SlurmdPidFile=$stage/slurmd.pid
SlurmctldLogFile=$stage/slurmctld.log
SlurmdLogFile=$stage/slurmd.log
PlugStackConfig=$stage/plugstack.conf
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=cohort Nodes=$node Default=YES MaxTime=60 State=UP
CONF
export SLURM_CONF=$stage/slurm.conf
{ slurmctld -f "$SLURM_CONF" && slurmd -f "$SLURM_CONF"; } >"$log" 2>&1
up=1
for _ in $(seq 1 60); do
  sinfo -h -o '%t' 2>/dev/null | grep -q idle && { up=0; break; }
  sleep 0.5
done
[ $up -eq 0 ] || cat "$stage"/slurm*.log >>"$log"
result $up "slurmctld and slurmd start on 127.0.0.1 (ports $port, $((port + 1))) and the node is idle"
[ $up -eq 0 ] || exit 0

make -C "$TOP_BUILDDIR" install DESTDIR="$stage/root" >"$log" 2>&1 &&
  # shellcheck disable=SC2086
  $CC -std=c99 -O1 -o "$stage/ctest" "$TOP_SRCDIR/test/ompi/coll_component_test.c" "$TOP_SRCDIR/test/ompi/coll_component_device.c" $MPI_CFLAGS $MPI_LIBS >>"$log" 2>&1
result $? "Cohort installed into a staging folder; the unmodified C MPI test program built"
prefix=$(sed -n 's/^prefix=//p' "$TOP_BUILDDIR/cohort.pc")
export COHORT_PREFIX=$stage/root$prefix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
cd "$stage" || exit 1

# sbatch --wait returns the job's exit status; a job that never starts is cut off, and why it
# waited (squeue's reason) is shown.
submit() {  # name [sbatch args...] script [program...]
  name=$1
  shift
  timeout 240 sbatch --wait --output="$stage/$name.out" "$@" >"$log" 2>&1
  status=$?
  [ $status -eq 124 ] && squeue -h -o 'job %i %T (%r)' >>"$log" 2>&1 && scancel -u "$(id -un)" 2>/dev/null
  cat "$stage/$name.out" >>"$log" 2>/dev/null
  return $status
}

submit srun --ntasks-per-node=4 "$TOP_SRCDIR/contrib/slurm/cohort.sbatch"
status=$?
[ $status -eq 0 ] && grep -q 'launcher srun' "$stage/srun.out" &&
  grep -q '^# Wrong elements *: 0 OK' "$stage/srun.out" && grep -q '^ *8388608 ' "$stage/srun.out"
result $? "sbatch cohort.sbatch: srun --mpi=pmix runs cohort_perf's checked sweep on 4 tasks, 0 wrong"

COHORT_LAUNCHER=mpirun submit mpirun --ntasks-per-node=3 "$TOP_SRCDIR/contrib/slurm/cohort.sbatch" "$stage/ctest"
status=$?
[ $status -eq 0 ] && grep -q 'launcher mpirun' "$stage/mpirun.out" &&
  grep -q 'summary: 0 wrong on 3 ranks' "$stage/mpirun.out" &&
  grep -Eq 'coll:cohort: MPI_COMM_WORLD: MPI_Allreduce [1-9][0-9]* on Cohort' "$stage/mpirun.out"
result $? "COHORT_LAUNCHER=mpirun: an unmodified MPI program inside the allocation runs its collectives on Cohort"

submit ftest --ntasks-per-node=2 "$TOP_SRCDIR/contrib/slurm/cohort.sbatch" "$stage/ctest"
status=$?
[ $status -eq 0 ] && grep -q 'summary: 0 wrong on 2 ranks' "$stage/ftest.out" &&
  grep -Eq 'MPI_Alltoall [1-9][0-9]* on Cohort' "$stage/ftest.out"
result $? "srun --mpi=pmix with the component: the same program on 2 tasks, every collective right"

stop_daemons
left=0
for d in slurmd slurmctld; do kill -0 "$(cat "$stage/$d.pid" 2>/dev/null)" 2>/dev/null && left=1; done
echo "daemons still running: $left" >"$log"
result $left "daemons stopped by their pid files"
