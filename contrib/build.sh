#!/bin/sh
# Configures and builds Cohort out of tree.  usage: contrib/build.sh BUILD_DIR [configure args]
# Says what it does as it goes (a full build takes minutes); the compilers' output is in
# BUILD_DIR/configure.out and BUILD_DIR/make.out.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
shift || true
[ -x "$top/configure" ] || { echo "build: generating configure (autogen.sh)"; "$top/autogen.sh" >/dev/null; }
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ]; then
  echo "build: configuring $PWD"
  "$top/configure" --prefix="$PWD/_install" "$@" >configure.out || { tail -30 configure.out; exit 1; }
  sed -n '/^configure: *$/,$p' configure.out
fi
echo "build: compiling in $PWD with $(nproc) jobs (output: $PWD/make.out)"
start=$(date +%s)
make -j"$(nproc)" >make.out 2>&1 &
pid=$!
# Progress every 20 s: how long, how many files compiled, the folder being built.
next=$((start + 20))
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
  now=$(date +%s)
  [ "$now" -ge "$next" ] && kill -0 "$pid" 2>/dev/null || continue
  next=$((now + 20))
  files=$(grep -c -E '^ +(CC|CXX|NVCC|GEN|FC|CCLD|CXXLD|FCLD) ' make.out || true)
  folder=$(sed -n "s/^Making all in //p" make.out | tail -1)
  echo "build: ... $((now - start)) s, $files files compiled or linked, now in ${folder:-.}"
done
if ! wait "$pid"; then
  grep -E -B2 -A3 'error' make.out | head -60
  tail -5 make.out
  exit 1
fi
echo "build: $PWD ok ($(( $(date +%s) - start )) s)"
