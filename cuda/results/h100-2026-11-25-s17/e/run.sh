#!/bin/bash
# Seventeenth session, call E (main, as call D): memcheck/racecheck/initcheck on the forward's and
# the backward's masked-keys cases, and the cuda suite, side by side.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17e; O=${OUT:-/tmp/out}/s17e; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
left=$(( 575 - ($(date +%s)-T0) ))
for tool in memcheck racecheck initcheck; do
  (cd $R/cuda && timeout $left env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^(TestAttentionMMAMaskedKeysInert|TestAttentionMMABwdMaskedKeysInert)$/B2_H4_Hkv2') >$O/$tool.log 2>&1 &
done
(cd $R/cuda && timeout $left $B/cuda.test -test.v -test.count=1) >$O/cuda.log 2>&1 &
wait
echo "cuda pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) skip=$(grep -c -- '--- SKIP' $O/cuda.log) $(tail -1 $O/cuda.log)" >>$O/tools.log
for tool in memcheck racecheck initcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1)" >>$O/tools.log; done
grep -- '--- FAIL' $O/cuda.log | head >>$O/tools.log
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test
cat $O/tools.log
