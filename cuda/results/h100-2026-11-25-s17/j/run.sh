#!/bin/bash
# Seventeenth session, call J: variants 43 and 44 (38 prefetching the next task's rows late in the current one) beside 22 and 38: ptxas -v,
# the forward's device tests on them, three rounds of BenchmarkAttentionMMA (bf16, the five,
# every attnbench shape), ncu DRAM bytes at N = 1024 causal, attnbench bf16 N = 1024 with
# the forward timed alone.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17j; O=${OUT:-/tmp/out}/s17j; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
(cd $R/cuda/ptx && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_persist.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*_v(22|38|43|44)_" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mma.only '_v(22|38|43|44)_' -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch|TestAttentionMMADeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over |want" $O/cuda.log | head -16 >>$O/tools.log
for r in 1 2 3; do
  left=$(( 330 - ($(date +%s)-T0) )); [ $left -lt 30 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/bf16/v(22|38|43|44)/' -test.benchtime 20x) >$O/bench$r.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
for v in 38 43 44; do for d in 128; do
  left=$(( 470 - ($(date +%s)-T0) )); [ $left -lt 20 ] && break
  (cd $R/cuda && timeout $left /usr/local/cuda/bin/ncu --kernel-name regex:fg_attn_fwd_wgmma_v${v}_bf16_d$d --launch-skip 1 --launch-count 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d$d/n1024/causal=true/bf16/^v$v\$" -test.benchtime 2x) >$O/ncu-v$v-d$d.log 2>&1
  echo "ncu v$v d$d rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done; done
left=$(( 570 - ($(date +%s)-T0) ))
: # attnbench: a call of its own (payload)
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attnbench
for f in $O/ncu-v*.log; do echo "== $f"; cat $f; done > $O/ncu.log; rm -f $O/ncu-v*.log $O/ptxas.log
cat $O/tools.log
grep -E "^== |gpu__time|dram__bytes|hit_rate|dram__throughput" $O/ncu.log
for f in $O/bench*.log; do grep -E "^Benchmark" $f | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/bf16.v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}'; done | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
grep -E "ours|FLASH" $O/attnbench.log | cut -c1-220
