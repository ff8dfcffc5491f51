#!/bin/bash
# Sixteenth session, call F (main, the session's final kernels: Exact forward with a factor per key
# tile, variant 30 at d = 128 below Nk = 4096): attnbench at every precision beside PyTorch SDPA (f32 EFFICIENT, bf16
# FLASH, bf16 cuDNN) in one run, 5 repetitions; then, side by side, memcheck/racecheck/initcheck
# on the forward's and the backward's masked-keys cases, the cuda suite (ops/attention's device
# tests: call G).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s16f; O=${OUT:-/tmp/out}/s16f; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R && timeout 300 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
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
cat $O/tools.log; sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench.log | head -16
grep -B1 -A14 "Forward+backward" $O/attnbench.log | grep "^|" | head -16
