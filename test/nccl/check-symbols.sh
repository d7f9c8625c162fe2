#!/bin/sh
# libnccl.so.2 of Cohort exports every NCCL entry point PyTorch 2.11's libtorch_cuda.so imports
# (measured on the GPU machine: nm -D --undefined-only), ncclCommCuDevice and ncclCommRevoke,
# nothing but nccl* symbols, and has NVIDIA's soname.  One TAP line per check.
lib=${NCCL_LIB:-../../src/nccl/.libs/libnccl.so.2}
echo "1..3"
wanted="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort
ncclCommCount ncclCommDeregister ncclCommDestroy ncclCommFinalize ncclCommGetAsyncError
ncclCommInitAll ncclCommInitRank ncclCommInitRankConfig ncclCommInitRankScalable
ncclCommRegister ncclCommShrink ncclCommSplit ncclCommUserRank ncclCommWindowDeregister
ncclCommWindowRegister ncclDevCommCreate ncclDevCommDestroy ncclGetErrorString
ncclGetLastError ncclGetUniqueId ncclGetVersion ncclGroupEnd ncclGroupSimulateEnd
ncclGroupStart ncclMemAlloc ncclMemFree ncclRecv ncclRedOpCreatePreMulSum ncclRedOpDestroy
ncclReduce ncclReduceScatter ncclSend ncclCommCuDevice ncclCommRevoke"
exports=$(nm -D --defined-only "$lib" 2>/dev/null | awk '{print $3}')
missing=""
for s in $wanted; do
  echo "$exports" | grep -qx "$s" || missing="$missing $s"
done
if [ -z "$missing" ] && [ -n "$exports" ]; then
  echo "ok 1 - the 40 entry points are exported"
else
  echo "not ok 1 - missing from $lib:${missing:- (no exports read)}"
fi
others=$(echo "$exports" | grep -v '^nccl' | grep -v '^$' | tr '\n' ' ')
if [ -z "$others" ]; then echo "ok 2 - only nccl* symbols"; else echo "not ok 2 - also exports: $others"; fi
soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" = libnccl.so.2 ]; then echo "ok 3 - soname libnccl.so.2"; else echo "not ok 3 - soname '$soname'"; fi
exit 0
