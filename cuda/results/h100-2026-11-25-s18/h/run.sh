#!/bin/bash
# Eighteenth session, call H (main after call G: every kernel that copies tiles by cp.async
# changed): side by side the cuda suite, ops/attention's device tests, and
# memcheck/racecheck/initcheck on the forward's and the backward's masked-keys cases.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18h; O=${OUT:-/tmp/out}/s18h; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attn.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
left=$(( 585 - ($(date +%s)-T0) ))
for tool in memcheck racecheck initcheck; do
  (cd $R/cuda && timeout $left env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^(TestAttentionMMAMaskedKeysInert|TestAttentionMMABwdMaskedKeysInert)$/B2_H4_Hkv2') >$O/$tool.log 2>&1 &
done
(cd $R/cuda && timeout $left $B/cuda.test -test.v -test.count=1) >$O/cuda.log 2>&1 &
(cd $R/ops/attention && timeout $left $B/attn.test -test.v -test.count=1 -test.run 'Device') >$O/attn.log 2>&1 &
wait
echo "cuda pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) skip=$(grep -c -- '--- SKIP' $O/cuda.log) $(tail -1 $O/cuda.log)" >>$O/tools.log
echo "ops/attention pass=$(grep -c -- '--- PASS' $O/attn.log) fail=$(grep -c -- '--- FAIL' $O/attn.log) skip=$(grep -c -- '--- SKIP' $O/attn.log) $(tail -1 $O/attn.log)" >>$O/tools.log
for tool in memcheck racecheck initcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1)" >>$O/tools.log; done
grep -h -- '--- FAIL' $O/cuda.log $O/attn.log | head >>$O/tools.log
for tool in memcheck racecheck initcheck; do echo "== $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|--- (PASS|FAIL)|=====" $O/$tool.log | head -60; done >$O/sanitizers.txt; rm -f $O/memcheck.log $O/racecheck.log $O/initcheck.log
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attn.test
cat $O/tools.log
