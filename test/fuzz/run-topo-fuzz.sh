#!/bin/sh
# Runs the topology loader's libFuzzer target for a bounded time (COHORT_FUZZ_SECONDS, 60) on
# the reference machines and the refused files as seeds.  A finding fails the test and leaves
# its input as topo-fuzz-crash-* in this folder.  Exit 77 (skip) where it was not built.
set -e
here=$(pwd)
src=${srcdir:-$(dirname "$0")}
if [ ! -x "$here/topo_xml_fuzz" ]; then
  echo "SKIP: topo_xml_fuzz not built: configure found no clang++ that links -fsanitize=fuzzer" \
       "(install clang and libclang-rt-14-dev, then reconfigure)"
  exit 77
fi
corpus="$here/topo-fuzz-corpus"  # what the fuzzer finds, kept for the next run
mkdir -p "$corpus"
exec "$here/topo_xml_fuzz" -max_total_time="${COHORT_FUZZ_SECONDS:-60}" -timeout=10 \
  -rss_limit_mb=2048 -dict="$src/topo_xml.dict" -artifact_prefix="$here/topo-fuzz-crash-" \
  -print_final_stats=1 "$corpus" "$src/../data/topo" "$src/../data/topo-bad"
