#!/bin/bash
# Eighteenth session, call I (main after the review mend, fg_copy_if: the same PTX instructions):
# the backward's and the forward's device tests on the defaults, the kept planes, memcheck and
# racecheck on the masked keys.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18i; O=${OUT:-/tmp/out}/s18i; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
for tool in memcheck racecheck; do
  (cd $R/cuda && timeout 300 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -mma.only '_v45_' -test.run '^(TestAttentionMMAMaskedKeysInert|TestAttentionMMABwdMaskedKeysInert)$/B2_H4_Hkv2') >$O/$tool.log 2>&1 &
done
(cd $R/cuda && timeout 300 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'none' -mma.only '_v45_' -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionKeptPlanes|TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
wait
for tool in memcheck racecheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1)" >>$O/tools.log; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|--- (PASS|FAIL)" $O/$tool.log >>$O/sanitizers.txt; rm $O/$tool.log; done
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test; cat $O/tools.log
