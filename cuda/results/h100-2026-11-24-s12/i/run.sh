#!/bin/bash
# Twelfth session, call I: the two-warpgroup dK/dV kernel's fragment handover with one arrival per
# warp (lane 0 after a warp sync; the mbarriers count 4) instead of one per thread (call F); ptxas,
# the Exact backward's device tests and determinism, racecheck and memcheck on its masked-keys test
# at d = 64, TestAttentionMMABwdTiming for Exact (every pair, the launches apart).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s12i; O=${OUT:-/tmp/out}/s12i; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
(cd $R/cuda && timeout 90 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/attention_hopper_exact_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -test.run '^(TestAttentionMMABwdDevice|TestAttentionMMABwdDeterminism|TestAttentionMMABwdMaskedKeysInert)$') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >$O/tools.log
for tool in racecheck memcheck; do
  (cd $R/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H2_Hkv1') >$O/$tool.log 2>&1 &
done
wait
for tool in racecheck memcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1)" >>$O/tools.log; done
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact) >$O/timing.log 2>&1
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log; grep -E -- '--- FAIL' $O/cuda.log | head; grep -hE "C75|spill" $O/ptxas.log | sort | uniq -c
grep "exact bwd \[wgmma" $O/timing.log | awk -F'|' '{print $5, $8, $11}' | head -24
