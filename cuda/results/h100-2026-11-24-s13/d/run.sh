#!/bin/bash
# Thirteenth session, call D: AHEAD without a branch between a wgmma's issue and its wait (fg_bwd_seen bitwise, the first head on the main path, the last step's head re-issues the last tile); the tests, sanitizers and timing of call C, the timing with bf16's default pair too (fg_bwd_seen is shared).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s13d; O=${OUT:-/tmp/out}/s13d; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
for m in attention_hopper_exact_bwd attention_hopper_exact; do
  (cd $R/cuda && timeout 90 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/$m.ptx -o /dev/null) >$O/ptxas-$m.log 2>&1
done
grep -A1 -E "exact_bwd|dkdv_exact|dq_exact" $O/ptxas-attention_hopper_exact_bwd.log | grep -E "Compiling|registers|spill" | head -24
grep -hE "C75|error" $O/ptxas-*.log | sort | uniq -c | head
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestPickMMABwd|TestBackwardScratch|TestPickMMA$') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL|Exact \[wgmma' $O/cuda.log | head -30
if ! grep -q -- '--- FAIL' $O/cuda.log; then
for tool in memcheck racecheck initcheck; do
  (cd $R/cuda && timeout 200 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H2_Hkv1') >$O/$tool.log 2>&1 &
done
wait
for tool in memcheck racecheck initcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1)" >>$O/tools.log; done
(cd $R/cuda && timeout 220 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact,bf16 -mmabwd.pairs exact) >$O/timing.log 2>&1
fi
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log; grep -E "exact bwd \[|^\| (64|128) " $O/timing.log | sed -E "s/\[fg_attn_hopper.*\]//; s/^\|   \|   \|   \| //" | cut -c1-150
