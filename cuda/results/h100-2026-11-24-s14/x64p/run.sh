#!/bin/bash
# Fourteenth session, helper x64p: the d = 64 Exact dK/dV kernel in FlashAttention-3's form
# (fg_attn_bwd_wgmma_dkdv_exact_d64_n128_m32_pp: a producer warpgroup, two symmetric consumer
# warpgroups of 64 keys each on the same query tile; BN = 128, 384 threads), listed after the
# default (ws_raw). ptxas -v (registers, spills, C75xx), the backward's device tests (default pairs
# and the pp and pp pong pairs), memcheck/racecheck/initcheck on the d = 64 masked-keys case, and
# TestAttentionMMABwdTiming for Exact (default and pp pairs side by side). Under 8 minutes.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x64p; O=${OUT:-/tmp/out}/x64p; mkdir -p $O
T0=$(date +%s)
ONLY='wgmma pp'
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
# The tests read kernels/*.cu from their working directory (TestPickMMABwd counts the
# instantiations): run them in $B/cuda, with x64p's kernels (kernels.tar), not main's.
rm -rf $B/cuda && mkdir -p $B/cuda && tar -C $B/cuda -xf $B/kernels.tar
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 90 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_exact_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
echo "ptxas rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -A4 -E "Compiling entry function 'fg_attn_bwd_wgmma_dkdv_exact_d64_n(128_m32_pp|64_m32_ws_raw)'" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -hE "C75|error" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $B/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mmabwd.only "$ONLY" -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestPickMMABwd|TestBackwardScratch|TestPickMMA$|TestAttentionDevice$|TestAttentionDeviceMaskedKeysInert|TestHeadsDevice|TestAttentionGradCheck|TestBackwardReadsHostL|TestAttentionMisalignedViews') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|trap" $O/cuda.log | head -8 >>$O/tools.log
if ! grep -q -- '--- FAIL' $O/cuda.log && grep -q -- '--- PASS: TestAttentionMMABwdDevice' $O/cuda.log; then
  for tool in memcheck racecheck initcheck; do
    (cd $B/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -mmabwd.only "$ONLY" -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H2_Hkv1') >$O/$tool.log 2>&1 &
  done
  wait
  for tool in memcheck racecheck initcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log; done
fi
# Timing even when a test failed (a wrong result still times; a trap shows as an error line).
left=$(( 450 - ($(date +%s)-T0) ))
[ $left -gt 150 ] && left=150
if [ $left -gt 30 ]; then
  (cd $B/cuda && timeout $left $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only "$ONLY") >$O/timing.log 2>&1
  echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
fi
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
grep -E "exact \[wgmma (pp|ws raw dkdv)" $O/cuda.log | sed -E "s/^ *//" | cut -c1-200 | head -30
sed -n '/^| 64 |/,/^| 128 |/p' $O/timing.log | grep -E "exact" | sed -E "s/\[fg_attn_[^]]*\]//" | cut -c1-240
