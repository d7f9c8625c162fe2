#!/bin/sh
# TAP test: runs the README's recipes as written.  A recipe is the ```sh block after a line
# `<!-- recipe: NAME -->`; they run in the order below, in one shell from the source folder,
# so each sees the variables the ones before it set.  They name the Quick start's build folder
# (build/), so only a make check there runs them.
# Environment (from Makefile.am): TOP_BUILDDIR, TOP_SRCDIR.
order="install program component component-check uninstall"
readme=$TOP_SRCDIR/README.md
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
if [ "$(cd "$TOP_BUILDDIR" && pwd -P)" != "$(cd "$TOP_SRCDIR/build" 2>/dev/null && pwd -P)" ]; then
  echo "1..0 # SKIP the README's recipes use the Quick start's build/; this build is $TOP_BUILDDIR"
  exit 0
fi
# Whatever a failing recipe left installed goes too.
trap 'make -C "$TOP_BUILDDIR" uninstall >/dev/null 2>&1; rm -rf "$stage"' EXIT
# As root and on few cores, mpirun wants these; the recipes say so in prose.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# The body of recipe $1 (empty when the README has none).
recipe() {
  awk -v name="$1" '
    $0 == "<!-- recipe: " name " -->" { want = 1; next }
    want && /^```sh$/ { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }
  ' "$readme"
}

n=0
result() {  # status description log
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; sed 's/^/# /' "$3"; fi
}

count=$(echo $order | wc -w)
echo "1..$((count + 4))"
listed=$(sed -n 's/^<!-- recipe: \(.*\) -->$/\1/p' "$readme" | sort | tr '\n' ' ')
expected=$(echo $order | tr ' ' '\n' | sort | tr '\n' ' ')
echo "README recipes: $listed; this test runs: $expected" >"$stage/names"
[ "$listed" = "$expected" ]
result $? "the README's recipes are the ones this test runs" "$stage/names"

# One script: every recipe, each announced, stopping at the first failing command.
script=$stage/recipes.sh
echo 'set -e' >"$script"
for name in $order; do
  echo "echo '=== recipe $name'" >>"$script"
  recipe "$name" >>"$script"
done
(cd "$TOP_SRCDIR" && timeout 600 sh -x "$script") >"$stage/out" 2>&1
status=$?
for name in $order; do
  # A recipe passed when the next one started (or, for the last, when the script ended well).
  grep -q "^=== recipe $name$" "$stage/out" && {
    next=$(echo $order | tr ' ' '\n' | sed -n "/^$name$/{n;p}")
    if [ -n "$next" ]; then grep -q "^=== recipe $next$" "$stage/out"; else [ $status -eq 0 ]; fi
  }
  result $? "recipe $name runs as written" "$stage/out"
done
grep -q "hello_cohort: 2 ranks, team and allreduce ok" "$stage/out"
result $? "the pkg-config program ran its allreduce on 2 ranks" "$stage/out"
grep -q "MPI_Allreduce 1 on Cohort" "$stage/out"
result $? "the component ran MPI_Allreduce on Cohort" "$stage/out"
# The uninstall recipe's find prints nothing: the line after its command is the next trace.
sed -n '/^+ find .* -type f$/,$p' "$stage/out" | sed 1d | grep -q . && status=1 || status=0
[ -d "$TOP_BUILDDIR/_install" ] && find "$TOP_BUILDDIR/_install" -type f | grep -q . && status=1
result $status "make uninstall left no installed file" "$stage/out"
