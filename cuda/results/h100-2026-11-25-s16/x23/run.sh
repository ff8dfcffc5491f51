#!/bin/bash
# Sixteenth session, call x23: variant 23 (variant 22 whose converters prefetch their next task's
# K and V rows into L2) and the 3xF16 pre-pass at 256 threads: ptxas -v, the forward's device
# tests of variants 23, 27, 30, BenchmarkAttentionPrep (v27), three rounds of
# BenchmarkAttentionMMA of BF16 22 and 23 and Exact 27 and 30 (RERUN=1: the benchmarks only;
# the first run's benchmark pattern matched nothing).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x23; O=${OUT:-/tmp/out}/x23${RERUN:+b}; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
[ -z "$RERUN" ] && (cd $B && for f in attention_hopper attention_hopper_persist; do timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v $f.ptx -o /dev/null; done) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*(_v(22|23|27|30)_|x3_kv)" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
[ -z "$RERUN" ] && (cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mma.only 'v(23|27|30)_' -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch|TestAttentionMMADeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over |want" $O/cuda.log | head -16 >>$O/tools.log
(cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionPrep/d(64|128)/exact/v27/' -test.benchtime 20x) >$O/prep.log 2>&1
for r in 1 2 3; do
  left=$(( 560 - ($(date +%s)-T0) )); [ $left -lt 30 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/(bf16|exact)/v(22|23|27|30)/' -test.benchtime 20x) >$O/bench$r.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
cat $O/tools.log
grep -E "^Benchmark" $O/prep.log | awk '{print $1, $3, $4, $5, $6}'
for f in $O/bench*.log; do grep -E "^Benchmark" $f | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/(exact|bf16).v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}'; done | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
