#!/bin/bash
# Sixteenth session, call x29a: variant 27 with a factor per key tile (one pre-pass, no maxima
# pass) and variant 29 (persistent, its converters under the products): ptxas -v, the forward's
# device tests, BenchmarkAttentionMMA of Exact variants 26, 27, 29.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x29a; O=${OUT:-/tmp/out}/x29a; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*(_v2[79]_|x3_kv)" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -iE "error|warn" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionMMABuffersScratch') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over |want" $O/cuda.log | head -16 >>$O/tools.log
left=$(( 570 - ($(date +%s)-T0) ))
(cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/exact/v2[679]/' -test.benchtime 20x) >$O/bench.log 2>&1
echo "bench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
grep -E "exact v2[79]" $O/cuda.log | sed -E "s/^ *//" | cut -c1-160 | head -12
grep -E "^Benchmark" $O/bench.log | sed -E 's/fg_attn_fwd_wgmma_//' | awk '{print $1, $3, $4, $5, $6}'
