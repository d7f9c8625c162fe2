#!/bin/sh
# The main job: set up, build, and run Cohort's multi-rank jobs on 4 ranks (NP=N for another
# count).  First team creation: the team (hosts, nodes, local ranks, GPUs), its init report,
# and creation time, on the GPUs when there are some (one per local rank; sharing one GPU
# needs MPS and COHORT_ALLOW_SHARED_GPU=1, which this script sets when ranks outnumber GPUs),
# else host-only.  Where nvidia-smi shows a GPU, then the allreduce sweep on GPU device memory
# (-m cuda), validated and set against the GPU's copy bandwidth (--roofline), and against NCCL
# (--vs-nccl) when every rank has a GPU of its own (np 1 on one GPU).  Then the collective sweep on host memory, as nccl-tests prints it:
# every size validated (--check) and timed against Open MPI's matching call in the same run
# (--vs-mpi).  The script fails if any result is wrong.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/setup-debian.sh"
"$top/contrib/build.sh" "$top/build" $("$top/contrib/local-arch.sh")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
export COHORT_DEBUG="${COHORT_DEBUG:-WARN}"
np=${NP:-4}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -gt 0 ] && [ "$gpus" -lt "$np" ]; then
  echo "demo: $np ranks on $gpus GPU(s): sharing allowed (run under MPS for concurrent kernels)"
  export COHORT_ALLOW_SHARED_GPU=1
fi
mpirun -np "$np" "$top/build/tools/cohort_perf" --team-create -n 50
echo
if [ "${gpus:-0}" -gt 0 ]; then
  nccl=""
  [ "$np" -le "$gpus" ] && nccl=--vs-nccl  # NCCL refuses two ranks on one GPU
  # Exit 77: cohort_perf found no usable GPU (or this build has no CUDA) and said why.
  rc=0
  mpirun -np "$np" "$top/build/tools/cohort_perf" -m cuda -c allreduce -b 8 -e 16M -f 8 --check \
    --roofline $nccl || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
  echo
fi
mpirun -np "$np" "$top/build/tools/cohort_perf" -c allreduce,allgather,reduce_scatter,broadcast \
  -b 8 -e 16M -f 8 --check --vs-mpi
