#!/bin/bash
# Sixteenth session, call x33: variants 33 and 34 (BF16 variant 22 with 3 and 4 chunks of K and V
# in flight per converter thread, setmaxnreg 56/224 and 72/216): ptxas -v, their device tests,
# three rounds of BenchmarkAttentionMMA of BF16 22, 33, 34.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x33; O=${OUT:-/tmp/out}/x33; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_persist.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*_v(22|33|34)_" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mma.only 'v3[34]_' -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
for r in 1 2 3; do
  left=$(( 560 - ($(date +%s)-T0) )); [ $left -lt 30 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/bf16/v(22|33|34)/' -test.benchtime 20x) >$O/bench$r.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
cat $O/tools.log
for f in $O/bench*.log; do grep -E "^Benchmark" $f | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/(exact|bf16).v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}'; done | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
