#!/bin/sh
# Configures and builds Cohort out of tree.  usage: contrib/build.sh BUILD_DIR [configure args]
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
shift || true
[ -x "$top/configure" ] || "$top/autogen.sh" >/dev/null
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ]; then
  "$top/configure" --prefix="$PWD/_install" "$@" >configure.out || { tail -30 configure.out; exit 1; }
  sed -n '/^configure: *$/,$p' configure.out
fi
make -j"$(nproc)" >make.out 2>&1 || { grep -E -B2 -A3 'error' make.out | head -60; tail -5 make.out; exit 1; }
echo "build: $PWD ok"
