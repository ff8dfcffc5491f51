#!/bin/bash
# Sixteenth session, call x31: variant 31 (variant 30 without the converters' L2 prefetch): its
# device tests, three rounds of BenchmarkAttentionMMA of Exact 27, 30, 31.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x31; O=${OUT:-/tmp/out}/x31; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mma.only 'v31_' -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
for r in 1 2 3; do
  left=$(( 560 - ($(date +%s)-T0) )); [ $left -lt 30 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096)/.*/exact/v(27|30|31)/' -test.benchtime 20x) >$O/bench$r.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
cat $O/tools.log
for f in $O/bench*.log; do grep -E "^Benchmark" $f | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/(exact|bf16).v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}'; done | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
