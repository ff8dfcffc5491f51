#!/bin/bash
# Sixteenth session, call RV (review mends: fg_dkdv_masked shared by every dK/dV kernel,
# fg_key_length, fg_prefetch_rows, FgX3Kv.tile, variant 27 without the item-start barrier):
# ptxas -v of the forward, the forward's and the backward's device tests, masked keys,
# determinism, memcheck on the forward's masked-keys case, BenchmarkAttentionMMA of Exact 27/30.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/rv16; O=${OUT:-/tmp/out}/rv16; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*(_v(27|30)_|x3_kv)" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
(cd $R/cuda && timeout 330 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionMMABuffersScratch|TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionDevice$|TestAttentionGradCheck') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
left=$(( 520 - ($(date +%s)-T0) ))
(cd $R/cuda && timeout $left env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.count=1 -test.v -mma.only 'v(27|30)_' -test.run '^TestAttentionMMAMaskedKeysInert$') >$O/memcheck.log 2>&1
echo "memcheck rc=$? pass=$(grep -c -- '--- PASS' $O/memcheck.log) $(grep -E 'ERROR SUMMARY' $O/memcheck.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log
left=$(( 570 - ($(date +%s)-T0) ))
(cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n1024/.*/exact/v(27|30)/' -test.benchtime 20x) >$O/bench.log 2>&1
echo "bench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
grep -E "^Benchmark" $O/bench.log | sed -E 's/fg_attn_fwd_wgmma_//' | awk '{print $1, $3, $4, $5, $6}'
