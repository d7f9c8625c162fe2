#!/bin/sh
# Prints the configure argument that builds the CUDA kernels for this machine only: the compute
# capabilities of its GPUs (nvidia-smi), or, with no GPU, sm_90 alone (nothing runs them here;
# the kernels still compile, as CI needs).  Prints nothing where nvcc is absent or lacks an
# architecture, so configure keeps its default (every major version from 7.5 to 9.0).
# The Quick start's scripts use it: it cuts the kernels' build from four passes to two.
# A build to install elsewhere should leave it out.
nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || exit 0
archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '. ' |
  grep -E '^[0-9]+$' | sort -un | paste -sd, -)
[ -n "$archs" ] || archs=90
supported=$("$nvcc" --list-gpu-code 2>/dev/null)
for a in $(echo "$archs" | tr ',' ' '); do
  echo "$supported" | grep -qx "sm_$a" || exit 0
done
echo "--with-cuda-arch=$archs"
