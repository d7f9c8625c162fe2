# Sourced by contrib/gpu-check.sh, multi-gpu-check.sh, wire-check.sh and staged-latency.sh
# (bash), with $build set to the build (or packed carry) folder relative to the working
# directory.
# A libtool-linked program's real binary (.libs/ when it links libcohort.so).
binary() { if [ -x "$PWD/$build/$(dirname "$1")/.libs/$(basename "$1")" ]; then
  echo "$PWD/$build/$(dirname "$1")/.libs/$(basename "$1")"; else echo "$PWD/$build/$1"; fi; }
# Open MPI's PMIx prints a harmless plugin-load warning per process there; keep logs readable.
quiet() { grep -v -e 'pmix_mca_base_component_repository_open' -e 'dlopen error' -e 'Perhaps a missing symbol'; }

# ucx_perftest TEST BYTES ITERS: one client run against a server of its own (on the next port
# from $port); prints its Final line: iterations, latency 50% / average / overall (us),
# bandwidth average / overall (MB/s), ...
port=$((20000 + $$ % 10000))
perftest() {
  port=$((port + 1))
  timeout 60 ucx_perftest -p $port >/dev/null 2>&1 &
  local server=$!
  sleep 1
  timeout 60 ucx_perftest localhost -p $port -t "$1" -s "$2" -n "$3" 2>&1 | grep '^Final'
  wait $server 2>/dev/null
}

# fake_hosts NP PER LOG [VAR=VALUE...] ARGS...: $perf (cohort_perf) over NP ranks on fake hosts
# (COHORT_HOST_ID) of PER ranks, with the variables given; LOG gets its output.  The ranks are
# local: they get mpirun's environment (no -x, which Open MPI refuses beside
# mca_base_env_list, set by the MPS helper of GPU machines).
fake_hosts() {
  local np=$1 per=$2 log=$3
  shift 3
  local envs=()
  while [[ ${1:-} == *=* ]]; do
    envs+=("$1")
    shift
  done
  timeout 600 mpirun -np "$np" env "${envs[@]}" sh -c \
    "COHORT_HOST_ID=fake-h\$((OMPI_COMM_WORLD_RANK / $per)) exec \"\$@\"" x "$perf" "$@" 2>&1 |
    quiet >"$log"
  return "${PIPESTATUS[0]}"
}
