#!/bin/bash
# Ninth session, call A: kept planes (AttentionBuffers.Planes: the BF16 forward's bfloat16 Q, K, V
# read by the backward). The new tests first, then the cuda suite with ops/attention's and the
# machine's device tests beside it, memcheck on one kept-planes case, and attnbench bf16 with
# and without Planes (no PyTorch: the kernels' own times).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9a; O=${OUT:-/tmp/out}/s9a; mkdir -p $O
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
run kept cuda 150 $B/cuda.test -test.v -test.count=1 -test.run 'TestKeptLayout|TestAttentionKeptPlanes|TestParamsHeader|TestAttentionMMABwdBuffersScratch'
(cd $R/ops/attention && timeout 220 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') >$O/ops-attention-device.log 2>&1 &
AP=$!
(cd $R/machine && timeout 220 $B/machine.test -test.v -test.count=1) >$O/machine.log 2>&1 &
MP=$!
run cuda cuda 230 $B/cuda.test -test.v -test.count=1
wait $AP; rc=$?
S+=("ops-attention (Device|Precision): rc=$rc pass=$(grep -c -- '--- PASS' $O/ops-attention-device.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention-device.log)")
grep -- '--- FAIL' $O/ops-attention-device.log | head -8 | sed "s/^/  ops-attention: /" >>$O/failures.txt
wait $MP; rc=$?
S+=("machine: rc=$rc pass=$(grep -c -- '--- PASS' $O/machine.log) fail=$(grep -c -- '--- FAIL' $O/machine.log)")
grep -- '--- FAIL' $O/machine.log | head -8 | sed "s/^/  machine: /" >>$O/failures.txt
run memcheck cuda 100 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionKeptPlanes$/B2_H4'
for pl in true false; do
  (cd $R && timeout 80 $B/attnbench -prec bf16 -planes=$pl) >$O/attnbench-planes-$pl.log 2>&1
  echo "attnbench -planes=$pl rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
done
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/bench.txt; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep -h "TestAttentionKeptPlanes\|TestKeptLayout\|TestCUDAAttentionPrecisions" $O/kept.log $O/machine.log | grep -- "--- " >>$O/summary.txt
cat $O/summary.txt
grep -h "bf16  fwd" $O/attnbench-planes-*.log | sed 's/(fg.*//' 
cd $O/.. && tar czf s9a.tgz s9a
