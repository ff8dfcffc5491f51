#!/bin/bash
# Fifteenth session, call x3a: the Exact backward on half products (3xF16, X3) at d = 64.
# ptxas -v (registers, spills, C75xx), the backward device tests (the default pair now X3, and
# the X3 pairs), sanitizers on the masked-keys case, the backward timing of the X3 pairs and the
# 3xTF32 default, and attnbench -prec exact -d 64 beside PyTorch.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x3a; O=${OUT:-/tmp/out}/x3a; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
echo "ptxas rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -A4 -E "Compiling entry function '.*_x3" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -hE "C75|error" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'x3' -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestPickMMABwd|TestBackwardScratch|TestAttentionDevice$|TestAttentionDeviceMaskedKeysInert|TestHeadsDevice|TestAttentionGradCheck|TestBackwardReadsHostL|TestAttentionMisalignedViews') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over 1.5|want" $O/cuda.log | head -12 >>$O/tools.log
for tool in memcheck racecheck initcheck; do
  (cd $R/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H4_Hkv2') >$O/$tool.log 2>&1 &
done
(cd $R/cuda && timeout 150 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only 'x3|ws raw dkdv') >$O/timing.log 2>&1
echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
wait
for tool in memcheck racecheck initcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log; done
left=$(( 540 - ($(date +%s)-T0) ))
if [ $left -gt 30 ]; then
  (cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -d 64 -reps 3) >$O/attnbench.log 2>&1
  echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
fi
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
grep -E "exact \[.*x3.*\]: dQ" $O/cuda.log | sed -E "s/^ *//" | cut -c1-220 | head -30
grep -E "^\|" $O/timing.log | cut -c1-260 | head -40
grep -E "^\|" $O/attnbench.log 2>/dev/null | head -30
