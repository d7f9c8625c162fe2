#!/bin/sh
# Installs what Cohort builds and tests with on Debian 12 (the CUDA toolkit, if wanted, comes
# from NVIDIA and is found at /usr/local/cuda).  Does nothing when everything is present.
set -e
packages="build-essential autoconf automake libtool pkg-config openmpi-bin libopenmpi-dev
          libucx-dev libhwloc-dev libxml2-dev libgtest-dev nlohmann-json3-dev python3-matplotlib
          gfortran slurmctld slurmd slurm-client clang libclang-rt-14-dev"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "setup: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
