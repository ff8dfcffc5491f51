#!/bin/bash
# Ninth session, call B: kept planes with dK/dV's strides fixed (the K/V tiles' head found from
# B, Hkv, Nk: fg_kv_head). The kept-planes tests, the backward's device tests, memcheck on the
# d = 64 kept-planes cases, the machine's precision test, then attnbench bf16 with and without
# Planes, alternating (no PyTorch).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9b; O=${OUT:-/tmp/out}/s9b; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
run kept cuda 150 $B/cuda.test -test.v -test.count=1 -test.run 'TestKeptLayout|TestAttentionKeptPlanes|TestParamsHeader|TestAttentionMMABwd|TestAttentionMMABuffersScratch|TestAttentionMMADevice|TestAttentionMisalignedViews'
run machine machine 60 $B/machine.test -test.v -test.count=1 -test.run 'TestCUDAAttention'
run memcheck cuda 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionKeptPlanes$/(B2_H4|B2_H2)'
for pl in true false true false; do
  (cd $R && timeout 80 $B/attnbench -prec bf16 -planes=$pl) >>$O/attnbench-planes-$pl.log 2>&1
  echo "attnbench -planes=$pl rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
done
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/bench.txt; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep -h "TestAttentionKeptPlanes\|TestKeptLayout\|TestCUDAAttentionPrecisions" $O/kept.log $O/machine.log | grep -- "--- " >>$O/summary.txt
cat $O/summary.txt
for pl in true false; do echo "== planes=$pl"; grep -h "bf16  fwd" $O/attnbench-planes-$pl.log | sed 's/(fg.*//;s/ours {B:[0-9]* H:16 //;s/, err.*//'; done
cd $O/.. && tar czf s9b.tgz s9b
