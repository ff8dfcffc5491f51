#!/bin/bash
# Fourteenth session, helper x128q: the Exact dQ kernel on wgmma at d = 128
# (fg_attn_bwd_wgmma_dq_exact_d128_m64_n32_reg_one: Q hi in registers, the default; _one: Q hi in
# shared memory), paired with the one-stage dK/dV kernel. ptxas -v on the module (registers,
# spills, C75xx), the backward's device tests (every pair, d = 64 and 128: the new pairs and the
# one-stage dK/dV + mma.sync dQ pair), memcheck/racecheck/initcheck on the d = 128 masked-keys
# case, TestAttentionMMABwdTiming for Exact (pairs matching "one"), and attnbench -prec exact
# -d 128 beside PyTorch. Budget: under 9 minutes.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x128q; O=${OUT:-/tmp/out}/x128q; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
# The tests read kernels/*.cu from their working directory (TestPickMMABwd counts the
# instantiations): run them in $B/cuda, with x128q's kernels (kernels.tar), not main's.
rm -rf $B/cuda && mkdir -p $B/cuda && tar -C $B/cuda -xf $B/kernels.tar
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 90 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_exact_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
echo "ptxas rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -A4 -E "Compiling entry function '(fg_attn_bwd_wgmma_dkdv_exact_d128|fg_attn_bwd_wgmma_dq_exact_d)" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -hE "C75|error" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $B/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestPickMMABwd|TestBackwardScratch|TestPickMMA$|TestAttentionDevice$|TestAttentionDeviceMaskedKeysInert|TestHeadsDevice|TestAttentionGradCheck|TestBackwardReadsHostL|TestAttentionMisalignedViews') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:" $O/cuda.log | head -8 >>$O/tools.log
if ! grep -q -- '--- FAIL' $O/cuda.log && grep -q -- '--- PASS: TestAttentionMMABwdDevice' $O/cuda.log; then
  for tool in memcheck racecheck initcheck; do
    (cd $B/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H4_Hkv2') >$O/$tool.log 2>&1 &
  done
  wait
  for tool in memcheck racecheck initcheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log; done
  (cd $B/cuda && timeout 130 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only 'one') >$O/timing.log 2>&1
  echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
  left=$(( 530 - ($(date +%s)-T0) ))
  if [ $left -gt 30 ]; then
    (cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -d 128 -reps 5) >$O/attnbench.log 2>&1
    echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
  fi
fi
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
grep -E "exact \[.*(dq m64 n16|dq m64 n32)\]: dQ" $O/cuda.log | sed -E "s/^ *//" | cut -c1-200 | head -40
sed -n '/^| 128 |/,$p' $O/timing.log | grep -E "exact" | sed -E "s/\[fg_attn_hopper[^]]*\]//" | cut -c1-240
grep -E "^\|" $O/attnbench.log 2>/dev/null | head -30
