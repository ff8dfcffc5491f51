#!/bin/bash
# Sixteenth session, call x29c: variant 27's pre-pass reading each tile once (registers): ptxas -v,
# the forward's device tests, BenchmarkAttentionPrep (v27), and three rounds of
# BenchmarkAttentionMMA of Exact variants 27, 29 to 32 at N = 1024 and 4096.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x29c; O=${OUT:-/tmp/out}/x29c; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*(_v(27|29|30|31|32)_|x3_kv)" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over |want" $O/cuda.log | head -16 >>$O/tools.log
(cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionPrep/d(64|128)/exact/v27/' -test.benchtime 20x) >$O/prep.log 2>&1
for r in 1 2 3; do
  left=$(( 560 - ($(date +%s)-T0) )); [ $left -lt 30 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096)/.*/exact/v(27|29|30|31|32)/' -test.benchtime 20x) >$O/bench$r.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
cat $O/tools.log
grep -E "^Benchmark" $O/prep.log | awk '{print $1, $3, $4, $5, $6}'
for f in $O/bench*.log; do grep -E "^Benchmark" $f | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/exact.v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}'; done | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
