#!/bin/bash
# Eighth session, call L: final main through the cuda suite (every kernel's device tests, the
# 50-run determinism checks, the misaligned Views), ops/attention's device tests (in the
# background), and initcheck on the forward's masked-key test (every Hopper forward variant).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8l; O=${OUT:-/tmp/out}/s8l; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
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
(cd $R/ops/attention && timeout 200 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') >$O/ops-attention-device.log 2>&1 &
AP=$!
run cuda cuda 220 $B/cuda.test -test.v -test.count=1
wait $AP; rc=$?
S+=("ops-attention (Device|Precision): rc=$rc pass=$(grep -c -- '--- PASS' $O/ops-attention-device.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention-device.log)")
grep -- '--- FAIL' $O/ops-attention-device.log | head -8 | sed "s/^/  ops-attention: /" >>$O/failures.txt
run initcheck cuda 90 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool initcheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$'
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep -h "TestDeviceVersusCPU\|TestDeterminism\|TestAttentionMMADeterminism\|TestAttentionMisalignedViews\|TestPointwiseDevice" $O/ops-attention-device.log $O/cuda.log | grep -- "^--- " >>$O/summary.txt
cat $O/summary.txt
cd $O/.. && tar czf s8l.tgz s8l
